#!/usr/bin/env python3
"""tests/run/check_formats.py: `heapledger report --format sarif|junit` on
stored runs of fake_client: a forked pair whose parent and child share a
leak site, and a process with leaks of every class, a heap error and a
suppressed site.

SARIF 2.1.0: @microsoft/sarif-multitool validate (installed into the build
directory from validators/package-lock.json with npm ci) reports no error or
warning; and the fields code scanning reads: one result per leak site and
class with its fingerprint in partialFingerprints, the counts and class of
that result in its message, the site's first frame of the program's own
code as the one location (never the allocator or libc) with the whole stack
as relatedLocations, a codeFlow and a stack, files relative to SRCROOT,
informationUri, a suppression named, heap errors as results. JUnit: parsed
as XML, one testcase per process (none names its test), failed exactly
where the gate fails (an unsuppressed definite or indirect leak, a heap
error, a process not seen whole), its failure listing each of those with its
stack, counts that add up.

usage: check_formats.py HEAPLEDGER FAKE_CLIENT BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import sarif_validator


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


RUNTIME = ("libheapledger", "libc.so", "libc-", "libstdc++", "ld-linux", "malloc", "strdup")


def hl(args, check=True):
    p = subprocess.run(args, capture_output=True, text=True)
    if check and p.returncode != 0:
        fail("%s exited %d:\n%s" % (args, p.returncode, p.stderr[-2000:]))
    return p


def check_sarif(doc, report):
    if doc.get("version") != "2.1.0" or not isinstance(doc.get("runs"), list) or len(doc["runs"]) != 1:
        fail("sarifLog: version/runs: %s" % {k: doc.get(k) for k in ("version", "$schema")})
    if "sarif-2.1.0" not in doc.get("$schema", ""):
        fail("$schema: %s" % doc.get("$schema"))
    run = doc["runs"][0]
    driver = run.get("tool", {}).get("driver", {})
    if not isinstance(driver.get("name"), str) or not driver["name"]:
        fail("run.tool.driver.name missing")
    rule_ids = {r["id"] for r in driver.get("rules", [])}
    leaks = [l for p in report["processes"] for l in p["leaks"]]
    errors = [e for p in report["processes"] for e in p["errors"]]
    sites = {(l["fingerprint"], l["kind"], l["suppressed"]) for l in leaks}
    results = run.get("results")
    if not isinstance(results, list) or len(results) != len(sites) + len(errors):
        fail("%d results for %d sites and %d heap errors" % (len(results or []), len(sites),
                                                            len(errors)))
    if not driver.get("informationUri", "").startswith(("file:", "http")):
        fail("tool.driver.informationUri: %s" % driver.get("informationUri"))
    if "SRCROOT" not in run.get("originalUriBaseIds", {}):
        fail("originalUriBaseIds has no SRCROOT: %s" % run.get("originalUriBaseIds"))
    seen = set()
    for r in results:
        if not isinstance(r.get("message", {}).get("text"), str):
            fail("result without message.text: %s" % r)
        if r.get("level") not in ("none", "note", "warning", "error"):
            fail("bad level: %s" % r.get("level"))
        locs = r.get("locations")
        if not locs or len(locs) != 1:
            fail("a result has one primary location: %s" % r)
        related = r.get("relatedLocations", [])
        for l in locs + related:
            pl = l.get("physicalLocation")
            if pl and not isinstance(pl.get("artifactLocation", {}).get("uri"), str):
                fail("physicalLocation without artifactLocation.uri: %s" % l)
            uri = pl["artifactLocation"]["uri"] if pl else ""
            if pl and not uri.startswith("file://") and pl["artifactLocation"].get("uriBaseId") != "SRCROOT":
                fail("a relative uri without uriBaseId: %s" % pl)
            if pl and "region" in pl and not any(k in pl["region"] for k in ("startLine", "byteOffset")):
                fail("region without a start: %s" % pl)
        frames = r["stacks"][0]["frames"]
        flow = r["codeFlows"][0]["threadFlows"][0]["locations"]
        if len(frames) != len(related) or len(flow) != len(related):
            fail("stack, codeFlow and relatedLocations differ in length")
        if r["ruleId"].startswith("heap-error/"):
            continue
        if r["ruleId"] not in rule_ids:
            fail("ruleId %s is not among the driver's rules" % r["ruleId"])
        fp = r.get("partialFingerprints", {}).get("heapledgerLeakSite/v1")
        kind = r["ruleId"][len("leak/"):]
        key = (fp, kind, "suppressions" in r)
        if key not in sites or key in seen:
            fail("result %s not one of the sites %s" % (key, sites))
        seen.add(key)
        mine = [l for l in leaks if (l["fingerprint"], l["kind"], l["suppressed"]) == key]
        props = r["properties"]
        want = (sum(l["bytes"] for l in mine), sum(l["blocks"] for l in mine), len(mine))
        if (props["bytes"], props["blocks"], props["processes"]) != want:
            fail("site %s: %s, leaks %s" % (key, props, mine))
        words = {"definitely": "definitely lost", "indirectly": "indirectly lost",
                 "possibly": "possibly lost", "reachable": "still reachable", "unknown": "lost"}
        text = r["message"]["text"]
        def n(count, one, many):
            return "%d %s" % (count, one if count == 1 else many)
        if not text.startswith("%s in %s %s %s in %s" % (
                n(want[0], "byte", "bytes"), n(want[1], "block", "blocks"),
                "is" if want[1] == 1 else "are", words[kind], n(want[2], "process", "processes"))):
            fail("site %s: message %r" % (key, text))
        if len(related) != len(mine[0]["stack"]):
            fail("site %s: %d related locations for %d frames" % (key, len(related),
                                                                  len(mine[0]["stack"])))
        top = (locs[0].get("logicalLocations") or [{}])[0].get("fullyQualifiedName", "")
        if any(top.startswith(w) for w in ("malloc", "calloc", "realloc", "strdup", "__libc")):
            fail("site %s: the primary location is the runtime's %s" % (key, top))
        sup = [l["suppression"] for l in mine if l["suppressed"]]
        if sup and r.get("suppressions", [{}])[0].get("justification") != sup[0]:
            fail("site %s: suppression %s not in %s" % (key, sup, r.get("suppressions")))
    return results


def check_junit(text, report):
    root = ET.fromstring(text)
    suites = root.findall("testsuite")
    cases = root.findall("testsuite/testcase")
    if root.tag != "testsuites" or len(suites) != 1 or len(cases) != len(report["processes"]):
        fail("junit: %d testcases for %d processes" % (len(cases), len(report["processes"])))
    total = 0
    for case, p in zip(cases, report["processes"]):
        counted = [l for l in p["leaks"] if not l["suppressed"] and
                   l["kind"] in ("definitely", "indirectly")]
        fails = bool(counted or p["errors"] or not p["exit"].get("exit_record", True) or
                     p["summary"].get("dropped_events", 0))
        failures = case.findall("failure")
        if len(failures) != int(fails):
            fail("testcase %s: %d failures, expected %d" % (case.get("name"), len(failures),
                                                            int(fails)))
        if not case.get("name").startswith("pid %d: " % p["pid"]) or " ".join(p["argv"]) not in case.get("name"):
            fail("testcase name %s" % case.get("name"))
        for f in failures:
            if not f.get("type") or not f.get("message") or " at " not in (f.text or ""):
                fail("failure without type, message or stack: %s" % ET.tostring(f))
            if (f.text or "").count(" lost") != len(counted):
                fail("failure does not list the %d counted records: %s" % (len(counted), f.text))
        total += int(fails)
    for node in (root, suites[0]):
        if int(node.get("failures")) != total or int(node.get("tests")) != len(cases):
            fail("counts of %s: %s" % (node.tag, node.attrib))


def main():
    heapledger, client, build_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    validator = sarif_validator.install(build_dir)
    with tempfile.TemporaryDirectory(prefix="hl-formats-") as tmp:
        db = os.path.join(tmp, "f.db")
        supp = os.path.join(tmp, "s.supp")
        with open(supp, "w") as f:
            f.write("leak:fake_child_leaker\n")
        hl([heapledger, "run", "-q", "--db", db, "--", client, "fork"])
        hl([heapledger, "run", "-q", "--db", db, "--suppressions", supp, "--", client,
            "gate_classes", "error"])
        for run in ("1", "2"):
            report = json.loads(hl([heapledger, "report", "--db", db, "--run", run,
                                    "--format", "json"]).stdout)
            sarif = json.loads(hl([heapledger, "report", "--db", db, "--run", run,
                                   "--format", "sarif"]).stdout)
            results = check_sarif(sarif, report)
            if validator:
                path = os.path.join(tmp, "run%s.sarif" % run)
                with open(path, "w") as f:
                    json.dump(sarif, f)
                sarif_validator.validate(validator, path)
            check_junit(hl([heapledger, "report", "--db", db, "--run", run,
                            "--format", "junit"]).stdout, report)
            if run == "1":
                shared = [r for r in results if r["properties"]["processes"] == 2]
                if len(report["processes"]) != 2 or len(shared) != 1:
                    fail("the forked pair's shared site is not one result: %s" % results)
            else:
                if not any(r["ruleId"] == "heap-error/double_free" for r in results):
                    fail("no heap error result")
                if not any("suppressions" in r for r in results):
                    fail("no suppressed result")
    print("PASS")


if __name__ == "__main__":
    main()
