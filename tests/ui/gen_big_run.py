#!/usr/bin/env python3
"""tests/ui/gen_big_run.py: adds a large synthetic daemon run to a database
made by a real `heapledger run` (so its schema is the binary's): PROCS
processes, RECORDS leak records in the first one, each on its own stack
main -> mid_J -> fn_K (fn_K at src/file_{K % 300}.c:{K % 900 + 1}, mid_J
at src/mid.c), and 4,096 timeline samples. The web UI's large-data
figures (doc/design.md, "The web UI on a large run") are measured on it, and ui_http checks the stack
filter's answers over it.

Usage: gen_big_run.py DB [RECORDS [PROCS]]; prints the new run's id.
"""
import sqlite3
import sys

CLASSES = ["definitely", "possibly", "reachable", "indirectly"]
MIDS = 100


def columns(c, table):
    return [r[1] for r in c.execute("PRAGMA table_info(%s)" % table)]


def next_id(c, table):
    return (c.execute("SELECT max(id) FROM %s" % table).fetchone()[0] or 0) + 1


def main():
    db = sys.argv[1]
    records = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    procs = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    con = sqlite3.connect(db)
    c = con.cursor()
    run = next_id(c, "runs")
    c.execute("INSERT INTO runs(id, mode, program, argv, started_ns, ended_ns, exit_code)"
              " VALUES (?, 'daemon', 'bigprog', '[\"bigprog\"]', 1, 2, 0)", (run,))
    p0 = next_id(c, "processes")
    c.executemany("INSERT INTO processes(id, run_id, serial, pid, ppid, parent_id, origin, exe, argv,"
                  " exit_how, exit_status) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                  [(p0 + i, run, i, 10000 + i, 1, p0 if i else None, "fork" if i else "start",
                    "/usr/bin/bigprog", "[]", "exit", 0) for i in range(procs)])
    c.executemany("INSERT INTO summaries(process_id, in_use_bytes, in_use_blocks, allocs, frees,"
                  " bytes_allocated, peak_bytes) VALUES (?,?,?,?,?,?,?)",
                  [(p0 + i, 100, 1, 10, 9, 1000, 500) for i in range(procs)])
    # Symbols: fn_K, then main, then mid_J. The schema is the binary's:
    # before version 12 symbols had a run and frames, stacks and aggregates
    # a process; since, symbols have a content key and frames and stacks a run.
    y0 = next_id(c, "symbols")
    per_run = "run_id" in columns(c, "symbols")
    syms = [("/usr/bin/bigprog", k * 16, "fn_%d" % k, "src/file_%d.c" % (k % 300), k % 900 + 1)
            for k in range(records)]
    syms.append(("/usr/bin/bigprog", 8, "main", "src/main.c", 10))
    syms += [("/usr/bin/bigprog", 4 + j, "mid_%d" % j, "src/mid.c", 20 + j) for j in range(MIDS)]
    if per_run:
        c.executemany("INSERT INTO symbols(id, run_id, module, module_offset, function, file, line)"
                      " VALUES (?,?,?,?,?,?,?)", [(y0 + i, run) + s for i, s in enumerate(syms)])
    else:
        # a key no real symbol has: these rows are never found again
        c.executemany("INSERT INTO symbols(id, key, module, module_offset, function, file, line)"
                      " VALUES (?,0,?,?,?,?,?)", [(y0 + i,) + s for i, s in enumerate(syms)])
    owner = "process_id" if "process_id" in columns(c, "frames") else "run_id"
    o = p0 if owner == "process_id" else run
    ymain, ymid = y0 + records, y0 + records + 1
    f0 = next_id(c, "frames")
    rows = [(f0, o, None, 1, ymain, 0)]
    rows += [(f0 + 1 + j, o, f0, 2 + j, ymid + j, 0) for j in range(MIDS)]
    leaf0 = f0 + 1 + MIDS
    rows += [(leaf0 + k, o, f0 + 1 + (k % MIDS), 1000 + k, y0 + k, 0) for k in range(records)]
    c.executemany("INSERT INTO frames(id, %s, parent_id, address, symbol_id, inlined)"
                  " VALUES (?,?,?,?,?,?)" % owner, rows)
    s0 = next_id(c, "stacks")
    c.executemany("INSERT INTO stacks(id, %s, depth, leaf_frame_id) VALUES (?,?,?,?)" % owner,
                  [(s0 + k, o, 3, leaf0 + k) for k in range(records)])
    if "process_id" in columns(c, "stack_aggregates"):
        # since version 12 the rows are in a table and stack_aggregates is a view
        c.executemany("INSERT INTO stack_aggregate_rows(process_id, stack_id, allocs, bytes, frees,"
                      " peak_live_bytes, leaked_bytes, leaked_blocks) VALUES (?,?,?,?,?,?,?,?)",
                      [(p0, s0 + k, 5, 100 + k, 4, 100, 20 + k % 1000, 1) for k in range(records)])
    else:
        c.executemany("INSERT INTO stack_aggregates VALUES (?,?,?,?,?,?,?)",
                      [(s0 + k, 5, 100 + k, 4, 100, 20 + k % 1000, 1) for k in range(records)])
    leaks = "leak_records" if columns(c, "leak_records") else "leaks"
    c.executemany("INSERT INTO " + leaks + "(process_id, stack_id, leak_class, bytes, blocks, rank)"
                  " VALUES (?,?,?,?,?,?)",
                  [(p0, s0 + k, CLASSES[k % 4], 20 + k % 1000, 1, k + 1) for k in range(records)])
    c.executemany("INSERT INTO timeline(process_id, time_ns, in_use_bytes, in_use_blocks) VALUES (?,?,?,?)",
                  [(p0, 1000 + t, t * 10, t) for t in range(4096)])
    con.commit()
    con.close()
    print(run)


main()
