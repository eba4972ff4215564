#!/usr/bin/env python3
"""tests/recipes/check_ci_yaml.py HEAPLEDGER MANUAL: the manual's CI recipes
work as written.

Every fenced block of doc/manual.md that follows a `<!-- recipe: NAME -->`
line is a recipe a user copies. They are run here on a small meson project
with a leaking test (`leaky`, 8 bytes from keep_name() in leaky.c) and a
clean one (`tidy`), with `heapledger` on PATH:

- github-actions: the workflow's steps run in order as a runner runs them
  (bash -eo pipefail; after a failed step only `if: always()` steps run).
  The actions a step `uses` are not run; what they would upload is checked:
  the SARIF (2.1.0, the leak located at leaky.c, baselineState `new`, then
  `unchanged` once the baseline has it), the JUnit file (a failure for
  `leaky` only, then none: the gate's verdict) and the artifact's path.
- gitlab-ci: `script` stops at the first failing line, `after_script` and
  `artifacts: when: always` follow; the JUnit report is checked the same way.
- baseline: each workflow fails with an empty leaks.baseline, then passes
  once the baseline recipe has written the file from the failed run.
- history: the JSON reports of two GitLab jobs imported into one database
  give one leak site leaking in both runs.
- meson-setup / meson-setup-run: `meson test --setup leaks` fails the
  leaking test and passes the clean one.
A recipe that cannot be parsed, uses an action this test does not know, or
contains a `${{ }}` expression (which a shell cannot stand for) fails the
test: keep recipes to what it can run."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET

import yaml

HL, MANUAL = (os.path.abspath(a) for a in sys.argv[1:3])
failures = []

LEAKY_C = r'''#include <stdlib.h>
#include <string.h>
static char *keep_name(const char *s)
{ char *p = malloc(strlen(s) + 1); strcpy(p, s); return p; }
int main(void) { char *p = keep_name("session"); p = 0; return p != 0; }
'''
TIDY_C = '''#include <stdlib.h>
int main(void) { free(malloc(16)); return 0; }
'''
MESON_BUILD = '''project('parser', 'c', default_options : ['debug=true', 'optimization=0'])
test('leaky', executable('leaky', 'leaky.c'), env : {'HEAPLEDGER_TEST_NAME' : 'leaky'})
test('tidy', executable('tidy', 'tidy.c'), env : {'HEAPLEDGER_TEST_NAME' : 'tidy'})
'''


def check(what, ok, detail=''):
    print(('ok: ' if ok else 'FAIL: ') + what + ('' if ok else '\n' + str(detail)[-4000:]))
    if not ok:
        failures.append(what)
    return ok


def recipes(text):
    """NAME -> the block's text, dedented to the marker's column."""
    found = {}
    for m in re.finditer(r'^( *)<!-- recipe: (\S+) -->\n\1```\w*\n(.*?)^\1```', text, re.M | re.S):
        found[m.group(2)] = textwrap.dedent(m.group(3))
    return found


def project(root, extra_meson=''):
    os.makedirs(root)
    for name, text in (('leaky.c', LEAKY_C), ('tidy.c', TIDY_C),
                       ('meson.build', MESON_BUILD + extra_meson)):
        with open(os.path.join(root, name), 'w') as f:
            f.write(text)


def environment(tmp):
    run = os.path.join(tmp, 'xdg-run')
    os.makedirs(run, 0o700, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('HEAPLEDGER_', 'XDG_', 'LD_PRELOAD', 'GITHUB_', 'CI_'))}
    env.update(PATH=os.path.dirname(HL) + ':/usr/local/bin:/usr/bin:/bin',
               HOME=os.path.join(tmp, 'home'), XDG_RUNTIME_DIR=run, CI='true')
    for k in ('HEAPLEDGER_LIB',):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def shell(script, cwd, env, shell_args=('bash', '--noprofile', '--norc', '-eo', 'pipefail', '-c')):
    p = subprocess.run(list(shell_args) + [script], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def check_sarif(where, path, state):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        return check(where + ': SARIF file is JSON', False, e)
    results = doc.get('runs', [{}])[0].get('results', [])
    uris = [r['locations'][0]['physicalLocation']['artifactLocation']['uri']
            for r in results if r.get('locations')]
    states = [r.get('baselineState') for r in results]
    check(where + ': SARIF 2.1.0 with the leak at leaky.c, baselineState %s' % state,
          doc.get('version') == '2.1.0' and uris == ['leaky.c'] and states == [state],
          json.dumps(doc)[:2000])


def check_junit(where, path, leaky_fails):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        return check(where + ': JUnit file is XML', False, e)
    failed = sorted(tc.get('name') for tc in root.iter('testcase') if tc.find('failure') is not None)
    names = sorted(tc.get('name') for tc in root.iter('testcase'))
    check(where + ': JUnit has a testcase per test, failing %s' % (['leaky'] if leaky_fails else []),
          names == ['leaky', 'tidy'] and failed == (['leaky'] if leaky_fails else []),
          ET.tostring(root, encoding='unicode'))


def github_job(where, workflow, cwd, env, leaky_fails):
    """Runs the workflow's one job; returns whether it passed."""
    if '${{' in workflow:
        check(where + ': no ${{ }} expressions', False, workflow)
    doc = yaml.safe_load(workflow)
    jobs = list(doc['jobs'].values())
    check(where + ': one job', len(jobs) == 1, doc)
    env = dict(env, GITHUB_ACTIONS='true', GITHUB_SHA='0123456789abcdef0123456789abcdef01234567',
               GITHUB_REF_NAME='main', GITHUB_HEAD_REF='', GITHUB_WORKSPACE=cwd)
    failed = False
    for i, step in enumerate(jobs[0]['steps'], 1):
        if failed and step.get('if') != 'always()':
            continue
        if 'run' in step:
            rc, out = shell(step['run'], cwd, env)
            print('%s: step %d exits %d: %s' % (where, i, rc, step['run'].splitlines()[0]))
            if rc != 0:
                print(out[-3000:])
                failed = True
            continue
        action, inputs = step.get('uses', ''), step.get('with', {})
        if action.startswith('actions/checkout@'):
            continue
        if action.startswith('github/codeql-action/upload-sarif@'):
            check_sarif(where, os.path.join(cwd, inputs['sarif_file']),
                        'new' if leaky_fails else 'unchanged')
        elif action.startswith('dorny/test-reporter@'):
            check(where + ': test-reporter reads JUnit', inputs.get('reporter') == 'java-junit', inputs)
            check_junit(where, os.path.join(cwd, inputs['path']), leaky_fails)
        elif action.startswith('actions/upload-artifact@'):
            check(where + ': artifact %s exists' % inputs['path'],
                  bool(glob.glob(os.path.join(cwd, inputs['path']))), os.listdir(cwd))
        else:
            check(where + ': step %d uses an action this test knows' % i, False, step)
    return not failed


def gitlab_job(where, pipeline, cwd, env, job_id, leaky_fails):
    doc = yaml.safe_load(pipeline)
    job = doc['leaks']
    env = dict(env, GITLAB_CI='true', CI_JOB_ID=str(job_id), CI_COMMIT_REF_NAME='main',
               CI_COMMIT_SHA='89abcdef0123456789abcdef0123456789abcdef')
    failed = False
    for line in job['script']:
        rc, out = shell(line, cwd, env)
        print('%s: script exits %d: %s' % (where, rc, line))
        if rc != 0:
            print(out[-3000:])
            failed = True
            break
    for line in job.get('after_script', []):
        rc, out = shell(line, cwd, env)
        check(where + ': after_script line exits 0: ' + line, rc == 0, out)
    artifacts = job['artifacts']
    check(where + ': artifacts kept when the job fails', artifacts.get('when') == 'always', artifacts)
    for path in artifacts.get('paths', []):
        check(where + ': artifact %s exists' % path, bool(glob.glob(os.path.join(cwd, path))),
              os.listdir(cwd))
    check_junit(where, os.path.join(cwd, artifacts['reports']['junit']), leaky_fails)
    return not failed


def main():
    found = recipes(open(MANUAL, encoding='utf-8').read())
    wanted = ('github-actions', 'gitlab-ci', 'baseline', 'history', 'meson-setup', 'meson-setup-run')
    if not check('the manual marks the recipes %s' % ', '.join(wanted),
                 all(w in found for w in wanted), sorted(found)):
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        env = environment(tmp)
        collected = []
        for name, runner in (('github-actions', github_job), ('gitlab-ci', gitlab_job)):
            cwd = os.path.join(tmp, name)
            project(cwd)
            open(os.path.join(cwd, 'leaks.baseline'), 'w').close()
            if name == 'github-actions':
                passed = runner(name + ' (empty baseline)', found[name], cwd, env, True)
            else:
                passed = runner(name + ' (empty baseline)', found[name], cwd, env, 101, True)
            check(name + ': the job fails on the new leak', not passed)
            rc, out = shell(found['baseline'], cwd, env)
            check(name + ': baseline recipe exits 0', rc == 0, out)
            with open(os.path.join(cwd, 'leaks.baseline')) as f:
                check(name + ': the baseline names keep_name', 'keep_name' in f.read())
            os.remove(os.path.join(cwd, 'leaks.db'))
            if name == 'github-actions':
                passed = runner(name + ' (baseline)', found[name], cwd, env, False)
            else:
                passed = runner(name + ' (baseline)', found[name], cwd, env, 102, False)
                collected = glob.glob(os.path.join(cwd, 'leaks-*.json'))
            check(name + ': the job passes once the leak is in the baseline', passed)

        hist = os.path.join(tmp, 'history')
        os.makedirs(hist)
        for f in collected:
            shutil.copy(f, hist)
        check('history: two jobs left JSON reports', len(collected) == 2, collected)
        rc, out = shell(found['history'], hist, env)
        check('history recipe exits 0', rc == 0, out)
        site = [line for line in out.splitlines() if 'keep_name' in line]
        check('history: keep_name leaked in both runs',
              len(site) == 1 and re.search(r'\b1\s+2\s+2\b', site[0]) is not None, out)

        cwd = os.path.join(tmp, 'meson-setup')
        project(cwd, found['meson-setup'])
        rc, out = shell('meson setup build', cwd, env)
        check('meson-setup: meson setup', rc == 0, out)
        rc, out = shell(found['meson-setup-run'], cwd, env)
        check('meson-setup: the leaking test fails the suite', rc != 0, out)
        check('meson-setup: leaky FAIL, tidy OK',
              re.search(r'leaky +FAIL', out) and re.search(r'tidy +OK', out), out)
    print('FAIL: %d checks' % len(failures) if failures else 'PASS')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
