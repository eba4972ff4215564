#!/bin/bash
# tests/ui/progs/suite_script.sh: a test written in bash, as suites have
# them: it forks for a command substitution and a pipeline. bash, built
# without debug information here, keeps most of its heap until exit (still
# reachable): records the leak table must not open on.
v=$(echo x)
[ "$v" = x ] && echo "$v" | cat >/dev/null
