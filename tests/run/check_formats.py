#!/usr/bin/env python3
"""tests/run/check_formats.py: `heapledger report --format sarif|junit` on
stored runs of fake_client: a forked pair whose parent and child share a
leak site, and a process with leaks of every class, a heap error and a
suppressed site.

SARIF 2.1.0: the fields the specification requires (sarifLog version and
runs, run tool.driver.name, result message.text, locations), one result per
leak site with its fingerprint in partialFingerprints, frames as locations,
a suppression named, heap errors as results. JUnit: parsed as XML, one
testcase per process (none names its test), failed exactly where the gate
fails (an unsuppressed definite or indirect leak, a heap error, a process
not seen whole), its failure listing each of those with its stack, counts
that add up.

usage: check_formats.py HEAPLEDGER FAKE_CLIENT
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


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
    sites = {l["fingerprint"] for l in leaks}
    results = run.get("results")
    if not isinstance(results, list) or len(results) != len(sites) + len(errors):
        fail("%d results for %d sites and %d heap errors" % (len(results or []), len(sites),
                                                            len(errors)))
    seen = set()
    for r in results:
        if not isinstance(r.get("message", {}).get("text"), str):
            fail("result without message.text: %s" % r)
        if r.get("level") not in ("none", "note", "warning", "error"):
            fail("bad level: %s" % r.get("level"))
        locs = r.get("locations")
        if not locs or not all("physicalLocation" in l or l.get("logicalLocations") for l in locs):
            fail("result without locations: %s" % r)
        for l in locs:
            pl = l.get("physicalLocation")
            if pl and not isinstance(pl.get("artifactLocation", {}).get("uri"), str):
                fail("physicalLocation without artifactLocation.uri: %s" % l)
            if pl and "region" in pl and not any(k in pl["region"] for k in ("startLine", "byteOffset")):
                fail("region without a start: %s" % pl)
        frames = r["stacks"][0]["frames"]
        if len(frames) != len(locs) or any("location" not in f for f in frames):
            fail("stack frames differ from the locations")
        if r["ruleId"].startswith("heap-error/"):
            continue
        if r["ruleId"] not in rule_ids:
            fail("ruleId %s is not among the driver's rules" % r["ruleId"])
        fp = r.get("partialFingerprints", {}).get("heapledgerLeakSite/v1")
        if fp not in sites or fp in seen:
            fail("partialFingerprints: %s (sites %s)" % (fp, sites))
        seen.add(fp)
        mine = [l for l in leaks if l["fingerprint"] == fp]
        props = r["properties"]
        if (props["bytes"], props["blocks"]) != (sum(l["bytes"] for l in mine),
                                                 sum(l["blocks"] for l in mine)):
            fail("site %s: %s, leaks %s" % (fp, props, mine))
        if len(locs) != len(mine[0]["stack"]):
            fail("site %s: %d locations for %d frames" % (fp, len(locs), len(mine[0]["stack"])))
        top = locs[0]["logicalLocations"][0]["fullyQualifiedName"]
        if top != mine[0]["stack"][0]["function"]:
            fail("first location %s, innermost frame %s" % (top, mine[0]["stack"][0]["function"]))
        sup = [l["suppression"] for l in mine if l["suppressed"]]
        if sup and r.get("suppressions", [{}])[0].get("justification") != sup[0]:
            fail("site %s: suppression %s not in %s" % (fp, sup, r.get("suppressions")))
        if not sup and "suppressions" in r:
            fail("site %s suppressed in SARIF only" % fp)
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
    heapledger, client = sys.argv[1], sys.argv[2]
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
