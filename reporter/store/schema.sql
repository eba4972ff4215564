-- reporter/store/schema.sql: the heapledger database, embedded into the binary at
-- build time (embed_sql.py). Each "-- migrate N" section takes a database
-- from PRAGMA user_version N-1 to N; the store applies every section above
-- the file's user_version, each in its own transaction. Never edit a section
-- that was released: append a new one.
--
-- Shape (as of the newest section): runs 1-n processes; a run has stacks and
-- their call tree (frames), shared by its processes; a process has modules,
-- per-stack aggregates, loss records (leak_records, its own or another
-- process's: the leaks view), errors, timeline samples and one summary.
-- Frames point at symbols, shared by all runs.
-- Columns for later work are here from the start so it needs no rewrite:
-- leak_class (leak scan), errors (heap misuse checks), fingerprint /
-- suppressed / labels / git_commit (history); the web UI reads the same tables.

-- migrate 1
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  mode TEXT NOT NULL,                 -- 'run' or 'daemon'
  program TEXT,                       -- basename of the command, for history
  argv TEXT NOT NULL,                 -- JSON array of the command
  cwd TEXT,
  hostname TEXT,
  git_commit TEXT,                    -- NULL until known
  started_ns INTEGER NOT NULL,        -- CLOCK_REALTIME
  ended_ns INTEGER,
  exit_code INTEGER                   -- what heapledger run exited with
);

CREATE TABLE run_labels (             -- --label key=value
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT,
  PRIMARY KEY (run_id, key)
);

CREATE TABLE processes (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  serial INTEGER NOT NULL,            -- order of HELLO within the run
  pid INTEGER NOT NULL,
  ppid INTEGER NOT NULL,
  parent_id INTEGER REFERENCES processes(id), -- fork parent or exec predecessor
  origin TEXT NOT NULL,               -- 'start', 'fork', 'exec'
  exe TEXT NOT NULL,
  argv TEXT NOT NULL,                 -- JSON array
  started_ns INTEGER,
  ended_ns INTEGER,
  exit_how TEXT NOT NULL,             -- exit, _exit, abort, signal, exec, unknown
  exit_status INTEGER,                -- for exit/_exit
  exit_signal INTEGER,                -- for signal
  scanned INTEGER NOT NULL DEFAULT 0  -- leak classes come from a scan
);
CREATE INDEX processes_run ON processes(run_id, serial);

CREATE TABLE summaries (
  process_id INTEGER PRIMARY KEY REFERENCES processes(id) ON DELETE CASCADE,
  in_use_bytes INTEGER NOT NULL,
  in_use_blocks INTEGER NOT NULL,
  allocs INTEGER NOT NULL,
  frees INTEGER NOT NULL,
  bytes_allocated INTEGER NOT NULL,
  peak_bytes INTEGER NOT NULL,
  inherited_bytes INTEGER NOT NULL DEFAULT 0,
  inherited_blocks INTEGER NOT NULL DEFAULT 0,
  dropped_events INTEGER NOT NULL DEFAULT 0,
  unmatched_frees INTEGER NOT NULL DEFAULT 0,
  unfreed_superseded INTEGER NOT NULL DEFAULT 0,
  live_mismatch INTEGER NOT NULL DEFAULT 0,
  errors INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE modules (
  id INTEGER PRIMARY KEY,
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  build_id TEXT,                      -- hex, NULL if none
  base INTEGER NOT NULL,              -- load bias
  low INTEGER NOT NULL,
  high INTEGER NOT NULL,
  unloaded INTEGER NOT NULL DEFAULT 0 -- dlclose'd before the end
);
CREATE INDEX modules_process ON modules(process_id);

CREATE TABLE symbols (                -- one symbolized frame, shared per run
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  module TEXT,
  module_offset INTEGER,
  function TEXT,                      -- demangled
  file TEXT,
  line INTEGER
);
CREATE INDEX symbols_function ON symbols(function);

CREATE TABLE stacks (
  id INTEGER PRIMARY KEY,
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  depth INTEGER NOT NULL,             -- frames as captured (before inlining)
  truncated INTEGER NOT NULL DEFAULT 0,
  fingerprint TEXT                    -- stable across runs
);
CREATE INDEX stacks_process ON stacks(process_id);

CREATE TABLE stack_frames (
  stack_id INTEGER NOT NULL REFERENCES stacks(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,          -- 0 = innermost, inlined frames expanded
  address INTEGER NOT NULL,
  symbol_id INTEGER REFERENCES symbols(id),
  inlined INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (stack_id, position)
) WITHOUT ROWID;

CREATE TABLE stack_aggregates (
  stack_id INTEGER PRIMARY KEY REFERENCES stacks(id) ON DELETE CASCADE,
  allocs INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  frees INTEGER NOT NULL,
  peak_live_bytes INTEGER NOT NULL,
  leaked_bytes INTEGER NOT NULL,
  leaked_blocks INTEGER NOT NULL
);

CREATE TABLE leaks (                  -- blocks left at the end, by stack and class
  id INTEGER PRIMARY KEY,
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  stack_id INTEGER REFERENCES stacks(id),
  leak_class TEXT NOT NULL,           -- unknown, definitely, indirectly, possibly, reachable, suppressed
  bytes INTEGER NOT NULL,
  blocks INTEGER NOT NULL,
  inherited_blocks INTEGER NOT NULL DEFAULT 0,
  rank INTEGER NOT NULL,              -- loss record number, 1 = largest
  fingerprint TEXT,                   -- stable across runs
  suppressed INTEGER NOT NULL DEFAULT 0,
  suppression TEXT                    -- name of the matching suppression
);
CREATE INDEX leaks_process ON leaks(process_id, rank);

CREATE TABLE leaked_blocks (
  leak_id INTEGER NOT NULL REFERENCES leaks(id) ON DELETE CASCADE,
  address INTEGER NOT NULL,
  size INTEGER NOT NULL,
  kind INTEGER NOT NULL,              -- enum hl_alloc_kind
  inherited INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX leaked_blocks_leak ON leaked_blocks(leak_id);

CREATE TABLE errors (                 -- heap misuse
  id INTEGER PRIMARY KEY,
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  address INTEGER NOT NULL,
  block_address INTEGER,
  block_size INTEGER,
  stack_id INTEGER REFERENCES stacks(id),
  alloc_stack_id INTEGER REFERENCES stacks(id),
  free_stack_id INTEGER REFERENCES stacks(id),
  time_ns INTEGER
);
CREATE INDEX errors_process ON errors(process_id);

CREATE TABLE timeline (               -- heap in use over time, sampled
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  time_ns INTEGER NOT NULL,           -- CLOCK_REALTIME
  in_use_bytes INTEGER NOT NULL,
  in_use_blocks INTEGER NOT NULL
);
CREATE INDEX timeline_process ON timeline(process_id, time_ns);

-- migrate 2
-- Frames become a call tree per process (see reporter/model/frame_tree.h): a node
-- is (caller node, frame) and a stack names its innermost node. cc1's 157k
-- stack_frames rows are 31k nodes; writing them was most of the store's time.
-- stack_frames stays, as a view with the same columns.
CREATE TABLE frames (
  id INTEGER PRIMARY KEY,
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  parent_id INTEGER,                  -- the caller's frames.id; NULL: outermost
  address INTEGER NOT NULL,
  symbol_id INTEGER REFERENCES symbols(id),
  inlined INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX frames_process ON frames(process_id);
-- (parent_id and leaf_frame_id are not declared as foreign keys: the rows go
-- with their process, and a declared key would need an index on each to keep
-- deletes from scanning the table once per deleted row.)
ALTER TABLE stacks ADD COLUMN leaf_frame_id INTEGER; -- innermost frames.id; NULL: no frames

-- Version 1's rows become one chain per stack, numbered in (stack, position)
-- order, so a frame's caller (position + 1) is the next number.
CREATE TEMP TABLE v1_frames AS
  SELECT f.stack_id, f.position, f.address, f.symbol_id, f.inlined, k.process_id,
         ROW_NUMBER() OVER (ORDER BY f.stack_id, f.position) AS node,
         MAX(f.position) OVER (PARTITION BY f.stack_id) AS outermost
  FROM stack_frames f JOIN stacks k ON k.id = f.stack_id;
INSERT INTO frames(id, process_id, parent_id, address, symbol_id, inlined)
  SELECT node, process_id, CASE WHEN position < outermost THEN node + 1 END,
         address, symbol_id, inlined
  FROM v1_frames;
UPDATE stacks SET leaf_frame_id =
  (SELECT node FROM v1_frames v WHERE v.stack_id = stacks.id AND v.position = 0);
DROP TABLE v1_frames;
DROP TABLE stack_frames;

-- Every stack's frames, 0 = innermost (as version 1's table). It walks every
-- stack: for one stack, filter inside the walk as store_load.c does.
CREATE VIEW stack_frames(stack_id, position, address, symbol_id, inlined) AS
  WITH RECURSIVE walk(stack_id, position, frame_id) AS (
    SELECT id, 0, leaf_frame_id FROM stacks WHERE leaf_frame_id IS NOT NULL
    UNION ALL
    SELECT w.stack_id, w.position + 1, f.parent_id
    FROM walk w JOIN frames f ON f.id = w.frame_id
    WHERE f.parent_id IS NOT NULL
  )
  SELECT w.stack_id, w.position, f.address, f.symbol_id, f.inlined
  FROM walk w JOIN frames f ON f.id = w.frame_id;

-- migrate 3
-- Storing a run must cost what the run holds, not what the history holds.
-- symbols_function took each run's new symbol rows into one index ordered by
-- function name, so every run rewrote pages all over it: with 20 cc1 runs in
-- the file it was 1,100 pages read and written again per run, and the store
-- after cc1 exited took 55 ms longer than on an empty file. Every other index
-- grows at its end (run, process and row ids only increase). History queries
-- go by leak fingerprint, not by function name.
DROP INDEX IF EXISTS symbols_function;

-- migrate 4
-- Leak history. A leak site is known across runs by its fingerprint
-- (reporter/model/fingerprint.h: function names and module basenames of the top
-- frames, no addresses), kept in leaks.fingerprint and once in leak_sites
-- with the first and last run that leaked there. leaks gets no index on
-- fingerprint: its entries would land all over the index and make every
-- store rewrite pages in proportion to the history (see migrate 3); history
-- queries read the leaks of the runs they cover through leaks_process.
-- leak_sites is keyed by fingerprint, so a run updates the rows of its own
-- sites in place. Runs gain the git branch (git_commit was there) and a
-- random UUID, so a run imported from another database is known again.
ALTER TABLE runs ADD COLUMN git_branch TEXT;
ALTER TABLE runs ADD COLUMN uuid TEXT;
CREATE TABLE leak_sites (
  fingerprint TEXT PRIMARY KEY,
  function TEXT,                      -- innermost program function, for display
  first_run_id INTEGER NOT NULL,
  last_run_id INTEGER NOT NULL
) WITHOUT ROWID;

-- migrate 5
-- Leak classes from the leak scan: a definitely lost record also counts the
-- bytes of the blocks lost only through it (valgrind's "N (D direct, I
-- indirect) bytes"). leaks.rank is the loss record number in valgrind's
-- order: smallest first, the largest last.
ALTER TABLE leaks ADD COLUMN indirect_bytes INTEGER NOT NULL DEFAULT 0;

-- migrate 6
-- Heap misuse errors name the call that made them (free, delete, delete[],
-- realloc, malloc_usable_size) and, for a sized delete of the wrong size,
-- the size it was given.
ALTER TABLE errors ADD COLUMN call TEXT;
ALTER TABLE errors ADD COLUMN detail INTEGER NOT NULL DEFAULT 0;

-- migrate 7
-- On-demand leak checks (heapledger_check_leaks(), check_signal=): per
-- check of a process, one row per leak class with the bytes and blocks the
-- scan found in it at that moment.
CREATE TABLE checks (
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,               -- 1, 2, ... per process image
  time_ns INTEGER NOT NULL,           -- CLOCK_REALTIME of the scan
  by_signal INTEGER NOT NULL,         -- run by check_signal=, else by the call
  all_threads_stopped INTEGER NOT NULL,
  scanned INTEGER NOT NULL,           -- the classes come from the scan
  leak_class TEXT NOT NULL,           -- as leaks.leak_class
  bytes INTEGER NOT NULL,
  blocks INTEGER NOT NULL
);
CREATE INDEX checks_process ON checks(process_id, seq);

-- migrate 8
-- The test a process belongs to: $HEAPLEDGER_TEST_NAME, set by the test
-- runner and sent by the hook (under a daemon, one run holds many tests).
ALTER TABLE processes ADD COLUMN test_name TEXT;

-- migrate 9
-- A stored run keeps what is queried: loss records, per-stack aggregates,
-- the timeline. leaked_blocks held a row per block of every loss record,
-- and nothing read it: a shell script's fork children (each inherits its
-- parent's heap) wrote 218k rows of it for 435 processes.
DROP TABLE IF EXISTS leaked_blocks;

-- migrate 10
-- The exit scan ran while a thread that did not stop for it (it blocked the
-- stop signal) kept running: that thread's stack was read whole, so the
-- classes are conservative. 1 for processes stored before this column.
ALTER TABLE processes ADD COLUMN all_threads_stopped INTEGER NOT NULL DEFAULT 1;

-- migrate 11
-- 1 when a process's event stream ended without its EXIT record (killed,
-- connection lost; an image replaced by exec is not): the events the hook
-- had not sent yet are missing. The hook never sends an EXIT saying
-- "signal" or "unknown", so rows stored before this column have it set.
ALTER TABLE processes ADD COLUMN no_exit_record INTEGER NOT NULL DEFAULT 0;
-- Then: the events read from the hook's shared event buffers (NULL: it
-- passed none, so everything it had not sent is missing).
ALTER TABLE processes ADD COLUMN recovered_events INTEGER;
UPDATE processes SET no_exit_record = 1 WHERE exit_how IN ('signal', 'unknown');

-- migrate 12
-- Storing a run costs what it holds, not a copy per process. A fork child
-- starts with its parent's stacks, and a shell's command substitutions each
-- stored the shell's few hundred stacks, their frames and aggregates again
-- (400 such children: 161k stack rows, 506k frame rows). Stacks and their
-- call tree are now the run's: a stack is stored once per run, found again
-- by `hash` (store.c: its return addresses, the identity of the module each
-- is in, depth and truncation), and a process names it from its aggregates,
-- loss records and errors. stack_aggregates gains the process (a shared stack
-- has one row per process that allocated from it).
-- Symbols are shared by every run: one row per (module, offset, function,
-- file, line), found again by `key`, a hash of those (hl_symbol_key, the
-- same function in C and SQL); pruning removes the rows no frame names. The
-- copies version 11 kept per run are merged here. The tables are rebuilt
-- (the store turns foreign keys off while it migrates, as SQLite's procedure
-- for changing a table asks): ids are kept, so leaks and errors need no change.
DROP VIEW IF EXISTS stack_frames;

CREATE TEMP TABLE v11_symbol_keep (id INTEGER PRIMARY KEY, keep INTEGER NOT NULL);
INSERT INTO temp.v11_symbol_keep
  SELECT id, min(id) OVER (PARTITION BY module, module_offset, function, file, line)
  FROM symbols;
CREATE TABLE symbols_v12 (             -- one symbolized frame, shared by all runs
  id INTEGER PRIMARY KEY,
  key INTEGER NOT NULL,               -- hl_symbol_key(module, module_offset, function, file, line)
  module TEXT,
  module_offset INTEGER,
  function TEXT,                      -- demangled
  file TEXT,
  line INTEGER
);
INSERT INTO symbols_v12(id, key, module, module_offset, function, file, line)
  SELECT s.id, hl_symbol_key(s.module, s.module_offset, s.function, s.file, s.line),
         s.module, s.module_offset, s.function, s.file, s.line
  FROM symbols s JOIN temp.v11_symbol_keep k ON k.id = s.id WHERE k.keep = s.id;

CREATE TABLE frames_v12 (             -- the run's call tree (frame_tree.h)
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  parent_id INTEGER,                  -- the caller's frames.id; NULL: outermost
  address INTEGER NOT NULL,
  symbol_id INTEGER REFERENCES symbols(id),
  inlined INTEGER NOT NULL DEFAULT 0
);
INSERT INTO frames_v12(id, run_id, parent_id, address, symbol_id, inlined)
  SELECT f.id, p.run_id, f.parent_id, f.address, coalesce(k.keep, f.symbol_id), f.inlined
  FROM frames f JOIN processes p ON p.id = f.process_id
  LEFT JOIN temp.v11_symbol_keep k ON k.id = f.symbol_id;

CREATE TABLE stacks_v12 (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  hash INTEGER,                       -- content (store.c); NULL: stored before version 12
  depth INTEGER NOT NULL,             -- frames as captured (before inlining)
  truncated INTEGER NOT NULL DEFAULT 0,
  fingerprint TEXT,
  leaf_frame_id INTEGER               -- innermost frames.id; NULL: no frames
);
INSERT INTO stacks_v12(id, run_id, hash, depth, truncated, fingerprint, leaf_frame_id)
  SELECT k.id, p.run_id, NULL, k.depth, k.truncated, k.fingerprint, k.leaf_frame_id
  FROM stacks k JOIN processes p ON p.id = k.process_id;

CREATE TABLE stack_aggregate_rows (   -- what one process allocated from one stack
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  stack_id INTEGER NOT NULL REFERENCES stacks(id),
  allocs INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  frees INTEGER NOT NULL,
  peak_live_bytes INTEGER NOT NULL,
  leaked_bytes INTEGER NOT NULL,
  leaked_blocks INTEGER NOT NULL,
  PRIMARY KEY (process_id, stack_id)
) WITHOUT ROWID;
INSERT INTO stack_aggregate_rows
  SELECT k.process_id, a.stack_id, a.allocs, a.bytes, a.frees, a.peak_live_bytes,
         a.leaked_bytes, a.leaked_blocks
  FROM stack_aggregates a JOIN stacks k ON k.id = a.stack_id;

DROP TABLE stack_aggregates;
DROP TABLE stacks;
DROP TABLE frames;
DROP TABLE symbols;
DROP TABLE temp.v11_symbol_keep;
ALTER TABLE symbols_v12 RENAME TO symbols;
ALTER TABLE frames_v12 RENAME TO frames;
ALTER TABLE stacks_v12 RENAME TO stacks;
-- Every index grows at its end (run and process ids only increase) but
-- symbols_key: a run's new symbols land all over it, and only those. (An
-- index on stacks' hash would take every new stack to a random place in
-- it: cc1's 8.6k stacks cost 14 ms more to insert. The writer keeps the
-- run's hashes in memory, and reads them through stacks_run if it must.)
CREATE INDEX symbols_key ON symbols(key);
CREATE INDEX frames_run ON frames(run_id);
CREATE INDEX stacks_run ON stacks(run_id);

-- Loss records, aggregates and modules too: a fork child that ends without
-- exec reports its parent's modules and heap as its own, and the children
-- of a loop (a shell's command substitutions) mostly report the same ones:
-- 400 children, 147k loss records, 21 different sets. A process whose set
-- is the same as an earlier process's of the run (the same rows but for
-- the process) names that process in leaks_from, aggregates_from or
-- modules_from and has no rows of its own. The rows are in leak_records,
-- stack_aggregate_rows and module_rows; leaks, stack_aggregates and modules
-- are views of every process's, with the columns the tables had, so what
-- reads them reads them as before (a leak or module id appears once per
-- process that has the row).
ALTER TABLE processes ADD COLUMN leaks_from INTEGER;      -- processes.id; NULL: its own rows
ALTER TABLE processes ADD COLUMN aggregates_from INTEGER; -- as leaks_from
ALTER TABLE processes ADD COLUMN modules_from INTEGER;    -- as leaks_from
ALTER TABLE leaks RENAME TO leak_records;
CREATE VIEW leaks(id, process_id, stack_id, leak_class, bytes, blocks, inherited_blocks,
                  rank, fingerprint, suppressed, suppression, indirect_bytes) AS
  SELECT l.id, p.id, l.stack_id, l.leak_class, l.bytes, l.blocks, l.inherited_blocks,
         l.rank, l.fingerprint, l.suppressed, l.suppression, l.indirect_bytes
  FROM processes p JOIN leak_records l ON l.process_id = coalesce(p.leaks_from, p.id);
CREATE VIEW stack_aggregates(process_id, stack_id, allocs, bytes, frees, peak_live_bytes,
                             leaked_bytes, leaked_blocks) AS
  SELECT p.id, a.stack_id, a.allocs, a.bytes, a.frees, a.peak_live_bytes, a.leaked_bytes,
         a.leaked_blocks
  FROM processes p JOIN stack_aggregate_rows a
    ON a.process_id = coalesce(p.aggregates_from, p.id);
ALTER TABLE modules RENAME TO module_rows;
CREATE VIEW modules(id, process_id, path, build_id, base, low, high, unloaded) AS
  SELECT m.id, p.id, m.path, m.build_id, m.base, m.low, m.high, m.unloaded
  FROM processes p JOIN module_rows m ON m.process_id = coalesce(p.modules_from, p.id);

-- As before: every stack's frames, 0 = innermost.
CREATE VIEW stack_frames(stack_id, position, address, symbol_id, inlined) AS
  WITH RECURSIVE walk(stack_id, position, frame_id) AS (
    SELECT id, 0, leaf_frame_id FROM stacks WHERE leaf_frame_id IS NOT NULL
    UNION ALL
    SELECT w.stack_id, w.position + 1, f.parent_id
    FROM walk w JOIN frames f ON f.id = w.frame_id
    WHERE f.parent_id IS NOT NULL
  )
  SELECT w.stack_id, w.position, f.address, f.symbol_id, f.inlined
  FROM walk w JOIN frames f ON f.id = w.frame_id;

-- migrate 13
-- On-demand checks keep their loss records, grouped by (stack, class) as
-- the exit's are: per check one row per record kept, with what changed
-- since the process's check before (valgrind's "16 (+16) bytes in 1 (+1)
-- blocks"). A check keeps at most 1000 (those that changed, then the
-- largest): checks.records_total says how many it had. 0 for checks
-- stored before this.
CREATE TABLE check_records (
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,               -- the check's checks.seq
  rank INTEGER NOT NULL,              -- loss record number in the check, 1 = smallest
  stack_id INTEGER REFERENCES stacks(id),
  leak_class TEXT NOT NULL,           -- as leaks.leak_class
  bytes INTEGER NOT NULL,             -- of the blocks themselves
  indirect_bytes INTEGER NOT NULL,    -- lost only through them
  blocks INTEGER NOT NULL,
  new_bytes INTEGER NOT NULL,         -- since the check before; negative: freed
  new_indirect_bytes INTEGER NOT NULL,
  new_blocks INTEGER NOT NULL
);
CREATE INDEX check_records_process ON check_records(process_id, seq, rank);
ALTER TABLE checks ADD COLUMN records_total INTEGER NOT NULL DEFAULT 0;
-- The threads a scan could not stop (they block the stop signal; their
-- stacks were read while they ran), by kernel thread id: check_seq 0 for
-- the exit scan, else the check's seq. processes.all_threads_stopped and
-- checks.all_threads_stopped say whether there were any; the hook names at
-- most 16 a scan, and older hooks none.
CREATE TABLE unstopped_threads (
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  check_seq INTEGER NOT NULL,
  tid INTEGER NOT NULL
);
CREATE INDEX unstopped_threads_process ON unstopped_threads(process_id, check_seq);

-- migrate 14
-- A check's loss records are matched against the suppressions and given
-- their leak site as the exit's are (leaks.fingerprint, suppressed,
-- suppression): a site suppressed at exit is suppressed in the checks too.
ALTER TABLE check_records ADD COLUMN fingerprint TEXT;
ALTER TABLE check_records ADD COLUMN suppressed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE check_records ADD COLUMN suppression TEXT;

-- migrate 15
-- The signal that ended a process, as the hook's handler saw it arrive
-- (valgrind's "Process terminating with default action of signal N"):
-- the signal, its si_code (<= 0: sent by a process), the fault address
-- (faults only, else 0) and the stack where it arrived, the interrupted
-- frame first. NULL when no such report came: exit_signal alone then says
-- the process was killed unseen (SIGKILL, or a handler of its own).
ALTER TABLE processes ADD COLUMN fatal_signal INTEGER;
ALTER TABLE processes ADD COLUMN fatal_code INTEGER;
ALTER TABLE processes ADD COLUMN fatal_address INTEGER;
ALTER TABLE processes ADD COLUMN fatal_stack_id INTEGER REFERENCES stacks(id);

-- migrate 16
-- Why a process's hook went on standalone before its end (the stream ended
-- without its exit record): reporter_stalled (the reporter took no byte for
-- wait_ms), connection_lost, descriptor_taken (the program closed or
-- replaced heapledger's descriptor), not_observed (a fork child its parent's
-- FORK named that never connected: a row with no events). NULL when it did
-- not, or nobody knows.
ALTER TABLE processes ADD COLUMN standalone TEXT;

-- migrate 17
-- Temporary allocations by stack: blocks freed right after their
-- allocation, with no other allocation or free of the same thread in
-- between (heaptrack's "temporary"; realloc counts as a free, then an
-- allocation): the UI's "most temporary allocations". 0 in rows stored
-- before this.
ALTER TABLE stack_aggregate_rows ADD COLUMN temporaries INTEGER NOT NULL DEFAULT 0;
DROP VIEW stack_aggregates;
CREATE VIEW stack_aggregates(process_id, stack_id, allocs, bytes, frees, peak_live_bytes,
                             leaked_bytes, leaked_blocks, temporaries) AS
  SELECT p.id, a.stack_id, a.allocs, a.bytes, a.frees, a.peak_live_bytes, a.leaked_bytes,
         a.leaked_blocks, a.temporaries
  FROM processes p JOIN stack_aggregate_rows a
    ON a.process_id = coalesce(p.aggregates_from, p.id);

-- migrate 18
-- The allocation-size histogram of a process: its allocations (a realloc
-- counts with its new size; inherited blocks in the parent only) and their
-- bytes, by power-of-two bin (include/heapledger/size_bins.h: bin 0 is
-- size 0, bin k sizes 2^(k-1) .. 2^k - 1). Only the bins it used have a
-- row, at most 65 a process. None for processes stored before this.
CREATE TABLE size_bins (
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  bin INTEGER NOT NULL,               -- 0..64
  allocs INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  PRIMARY KEY (process_id, bin)
) WITHOUT ROWID;

-- migrate 19
-- Peak consumers: what each stack held at the moment its process's heap
-- in use reached its peak (summaries.peak_bytes; ingest/state.c keeps it
-- with one compare per change), where peak_live_bytes is each stack's own
-- highest, reached at any time. A process's at_peak_bytes add up to its
-- peak but for blocks without a stack and, in a fork child, blocks it
-- inherited from stacks it never allocated from (it has no row for
-- those). NULL for rows stored before.
ALTER TABLE stack_aggregate_rows ADD COLUMN at_peak_bytes INTEGER;
DROP VIEW stack_aggregates;
CREATE VIEW stack_aggregates(process_id, stack_id, allocs, bytes, frees, peak_live_bytes,
                             leaked_bytes, leaked_blocks, temporaries, at_peak_bytes) AS
  SELECT p.id, a.stack_id, a.allocs, a.bytes, a.frees, a.peak_live_bytes, a.leaked_bytes,
         a.leaked_blocks, a.temporaries, a.at_peak_bytes
  FROM processes p JOIN stack_aggregate_rows a
    ON a.process_id = coalesce(p.aggregates_from, p.id);

-- migrate 20
-- Heap consumed over time by the top allocation sites (heaptrack's
-- "Consumed" chart): for the stacks that held the most at their own peak
-- (at most 24 a process, store.c), their bytes in use at each timeline
-- sample where they changed since the sample before (ingest/state.h,
-- hl_stack_point); a value holds until the stack's next row. sample is the
-- sample's number in the order the reporter took them, time_ns its time
-- (the timeline row it goes with). None for processes stored before, nor
-- for a process whose samples each changed too many stacks to keep.
CREATE TABLE stack_series (
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  stack_id INTEGER NOT NULL REFERENCES stacks(id),
  sample INTEGER NOT NULL,            -- 0, 1, ... per process
  time_ns INTEGER NOT NULL,           -- CLOCK_REALTIME, as timeline.time_ns
  bytes INTEGER NOT NULL,
  PRIMARY KEY (process_id, stack_id, sample)
) WITHOUT ROWID;

-- migrate 21
-- The file descriptors a process had open at its end (track_fds=yes|all,
-- valgrind's --track-fds; wire.h FD_SUMMARY and FD): fd_summaries holds the
-- counts of each process whose hook tracked them (no row: not tracked),
-- open_fds the descriptors listed, in valgrind's order (position 0, the
-- newest, first; inherited ones last).
CREATE TABLE fd_summaries (
  process_id INTEGER PRIMARY KEY REFERENCES processes(id) ON DELETE CASCADE,
  open INTEGER NOT NULL,              -- open at exit, 0, 1 and 2 included
  std INTEGER NOT NULL,               -- how many of them are 0, 1 or 2
  std_listed INTEGER NOT NULL         -- 1: track_fds=all, 0, 1 and 2 are listed too
);
CREATE TABLE open_fds (
  process_id INTEGER NOT NULL REFERENCES processes(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,          -- 0, 1, ... in listing order
  fd INTEGER NOT NULL,
  kind TEXT NOT NULL,                 -- file | socket
  family INTEGER,                     -- a socket's AF_*; NULL: a file, or not known
  text TEXT,                          -- the path, or a socket's addresses; NULL: none
  inherited INTEGER NOT NULL,         -- open when the image started
  unseen INTEGER NOT NULL,            -- made by a call the hook does not see
  stack_id INTEGER REFERENCES stacks(id), -- where the program made it
  PRIMARY KEY (process_id, position)
) WITHOUT ROWID;
