#!/usr/bin/env bash
# bench/store_shell.sh [N]: a shell script whose processes are mostly fork
# children that never exec: N command substitutions of a builtin (default
# 400), each a subshell that inherits the shell's heap and reports it, plus
# a few that exec coreutils. What `heapledger run` stores for it measures
# the store's cost on fork-heavy programs (doc/design.md, "Reporter performance").
set -eu
n=${1:-400}
declare -A seen=()
items=()
for ((i = 0; i < 2000; i++)); do
	items+=("item$i-$(( (i * 37) % 101 ))")
	seen[$(( i % 97 ))]=$i
done
sum=0
for ((i = 0; i < n; i++)); do
	# shellcheck disable=SC2116 # the subshell is the point
	v=$(echo "$i")
	sum=$(( sum + v ))
done
for ((i = 0; i < 10; i++)); do
	d=$(date +%s)
	: "$d"
done
echo "store_shell n=$n sum=$sum items=${#items[@]} keys=${#seen[@]}"
