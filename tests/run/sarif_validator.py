"""tests/run/sarif_validator.py: @microsoft/sarif-multitool, the SARIF 2.1.0
validator the tests run on heapledger's SARIF. It is installed into the build
directory from validators/package-lock.json with npm ci, once per lock file
(a stamp holds the lock it was installed from). Without npm the validation
is skipped, except under CI, where that is a failure.

`sarif-multitool validate` only runs its rules (SARIF1001...): it passes an
object the schema forbids (a notification's level "fatal", one without its
message, a string for a boolean). So validate() also checks the document
against the SARIF 2.1.0 JSON schema the multitool package ships, with
Python's jsonschema.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def install(build_dir):
    """sarif-multitool installed by npm ci into BUILD_DIR/validators, or None
    (then the validation is skipped, except under CI)."""
    where = os.path.join(build_dir, "validators")
    tool = os.path.join(where, "node_modules", ".bin", "sarif-multitool")
    lock = os.path.join(HERE, "validators", "package-lock.json")
    stamp = os.path.join(where, ".installed-lock")
    want = open(lock, encoding="utf-8").read()
    if not (os.path.exists(stamp) and open(stamp, encoding="utf-8").read() == want):
        if not shutil.which("npm"):
            return required(None)
        os.makedirs(where, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(HERE, "validators", name), where)
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                           cwd=where, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            print("npm ci of the SARIF validator failed: " + r.stderr[-1500:])
            return required(None)
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(want)
    # npm does not run the package's postinstall (chmod) by default
    native = os.path.join(where, "node_modules", "@microsoft", "sarif-multitool-linux",
                          "Sarif.Multitool")
    if os.path.exists(native):
        os.chmod(native, 0o755)
    return required(tool if os.path.exists(tool) else None)


def required(tool):
    if not tool and os.environ.get("CI"):
        fail("the SARIF validator could not be installed (CI is set)")
    return tool


def schema_errors(tool, path):
    """What the SARIF 2.1.0 schema beside the multitool says is wrong in
    path, as "where: what" lines."""
    try:
        import jsonschema
    except ImportError:
        if os.environ.get("CI"):
            fail("python's jsonschema is missing (CI is set)")
        return []
    modules = os.path.dirname(os.path.dirname(tool))  # node_modules/.bin/sarif-multitool
    where = os.path.join(modules, "@microsoft", "sarif-multitool-linux", "sarif-2.1.0.json")
    with open(where, encoding="utf-8") as f:
        schema = json.load(f)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    checker = jsonschema.validators.validator_for(schema)(schema)
    return ["/".join(map(str, e.absolute_path)) + ": " + e.message
            for e in checker.iter_errors(doc)]


def validate(tool, path):
    """Fails on anything the SARIF 2.1.0 schema forbids in path, and on any
    error or warning sarif-multitool reports on it (it exits 0 either
    way)."""
    wrong = schema_errors(tool, path)
    if wrong:
        fail("%s is not SARIF 2.1.0 (schema):\n%s" % (path, "\n".join(wrong[:20])))
    r = subprocess.run([tool, "validate", path], capture_output=True, text=True, timeout=300)
    found = [l for l in r.stdout.splitlines() if ": error " in l or ": warning " in l]
    if r.returncode != 0 or found:
        fail("sarif-multitool validate %s:\n%s" % (path, "\n".join(found) or r.stdout[-2000:]))
