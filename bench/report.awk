# report.awk: turns the runs recorded by bench/run.sh into the markdown tables
# of RESULTS.md. Input, tab-separated, one run a line:
#   round workload variant scale wall_s maxrss_kib status checksum note
# Round 0 lines carry no run: their status says why a cell is empty
# ("missing" or "n/a").
# Variables: plan ("variant:scale ..." in column order), workloads,
# synthetic (" churn ... ", the workloads with targets of their own), full
# (the scale of the allocator columns), rebuilt_of ("debian:rebuilt ...",
# Debian programs and their versions built from source).
# Every ratio is taken within one round (run / glibc at the same size in the
# same round), and the cell is the median over rounds, so a slow moment on the
# machine skews one round's pair, not a whole column.

function median(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	if (n == 0)
		return ""
	for (i = 2; i <= n; i++) {
		t = a[i] + 0
		for (j = i - 1; j >= 1 && a[j] + 0 > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

# Ratios of run k to run base, per round, of field f ("wall" or "rss").
function ratios(k, base, f,   r, list, num, den) {
	list = ""
	for (r = 1; r <= maxr; r++) {
		if (!((k, r) in wall) || !((base, r) in wall))
			continue
		if (status[k, r] != 0 || status[base, r] != 0)
			continue
		num = f == "wall" ? wall[k, r] : rss[k, r]
		den = f == "wall" ? wall[base, r] : rss[base, r]
		if (den > 0)
			list = list " " num / den
	}
	return list
}

# Why run k has no trustworthy number, or "" when it has.
function problem(k, w, s,   r, bad) {
	if (k in skip)
		return skip[k]
	bad = ""
	for (r = 1; r <= maxr; r++) {
		if (!((k, r) in wall))
			continue
		if (status[k, r] != 0)
			return "**FAILED (exit " status[k, r] ")**"
		if (!((w, s) in ref))
			bad = "**NO GLIBC REFERENCE**"
		else if (sum[k, r] != ref[w, s])
			return "**MISMATCH**"
	}
	return bad
}

function cell(w, v, s, f,   k, p, m) {
	k = w SUBSEP v SUBSEP s
	p = problem(k, w, s)
	if (p != "")
		return p
	m = median(ratios(k, w SUBSEP "glibc" SUBSEP s, f))
	if (m == "")
		return "no data"
	return sprintf("%.2f", m) (noevents[k] ? " †" : "")
}

function label(v, s) {
	return s == full ? v : v " (" s "%)"
}

function table(title, f,   i, j, w, line, sep) {
	print "## " title
	print ""
	line = "| Workload |"
	sep = "|---|"
	for (j = 1; j <= ncols; j++) {
		line = line " " label(colv[j], cols[j]) " |"
		sep = sep "---:|"
	}
	print line
	print sep
	for (i = 1; i <= nwork; i++) {
		w = work[i]
		line = "| " w " |"
		for (j = 1; j <= ncols; j++)
			line = line " " cell(w, colv[j], cols[j], f) " |"
		print line
	}
	print ""
}

function absolute(w, s, f,   k, r, list) {
	k = w SUBSEP "glibc" SUBSEP s
	list = ""
	for (r = 1; r <= maxr; r++)
		if ((k, r) in wall && status[k, r] == 0)
			list = list " " (f == "wall" ? wall[k, r] : rss[k, r] / 1024)
	return list == "" ? "-" : sprintf(f == "wall" ? "%.3f s" : "%.1f MiB", median(list))
}

function glibc_table(   i, j, w, line, sep) {
	print "## glibc, absolute medians"
	print ""
	line = "| Workload |"
	sep = "|---|"
	for (j = 1; j <= nsizes; j++) {
		line = line " time " sizes[j] "% | peak RSS " sizes[j] "% |"
		sep = sep "---:|---:|"
	}
	print line
	print sep
	for (i = 1; i <= nwork; i++) {
		w = work[i]
		line = "| " w " |"
		for (j = 1; j <= nsizes; j++)
			line = line " " absolute(w, sizes[j], "wall") " | " absolute(w, sizes[j], "rss") " |"
		print line
	}
	print ""
}

# A verdict table's heading, an optional note, and its header rows.
function verdict_head(title, note, columns, align) {
	print "## " title
	print ""
	if (note != "") {
		print note
		print ""
	}
	print columns
	print align
}

# heapledger against the issue's targets, for every workload it ran.
function targets_table(v,   i, w, hl, mi, t, m, vs, miss, p) {
	verdict_head(v " against the targets", "",
		     "| Workload | time / glibc | time / mimalloc | peak RSS / glibc | verdict |",
		     "|---|---:|---:|---:|---|")
	for (i = 1; i <= nwork; i++) {
		w = work[i]
		hl = w SUBSEP v SUBSEP full
		mi = w SUBSEP "mimalloc" SUBSEP full
		if (!(hl in seen) && !(hl in skip))
			continue
		p = problem(hl, w, full)
		if (p != "") {
			print "| " w " | " p " | | | " (p ~ /^\*\*/ ? "misses" : "not measured") " |"
			continue
		}
		t = median(ratios(hl, w SUBSEP "glibc" SUBSEP full, "wall"))
		m = median(ratios(hl, w SUBSEP "glibc" SUBSEP full, "rss"))
		vs = (mi in seen && problem(mi, w, full) == "") ? median(ratios(hl, mi, "wall")) : ""
		miss = ""
		if (index(synthetic, " " w " ")) {
			if (t >= 1)
				miss = miss ", not faster than glibc"
			if (vs != "" && vs > 1.25)
				miss = miss ", over 1.25x mimalloc"
		} else if (t > 1.05) {
			miss = miss ", over 1.05x glibc"
		}
		if (m > 1.2)
			miss = miss ", RSS over 1.2x glibc"
		printf("| %s | %.2f | %s | %.2f | %s |\n", w, t,
		       vs == "" ? "-" : sprintf("%.2f", vs), m,
		       miss == "" ? "meets" : "misses: " substr(miss, 3))
	}
	print ""
}

# Scale of variant v's column, or "".
function scale_of(v,   j) {
	for (j = 1; j <= ncols; j++)
		if (colv[j] == v)
			return cols[j]
	return ""
}

# Median time ratio of variant v to glibc on workload w at scale sc, or "".
function time_ratio(w, v, sc,   k) {
	k = w SUBSEP v SUBSEP sc
	if (sc == "" || !(k in seen) || problem(k, w, sc) != "")
		return ""
	return median(ratios(k, w SUBSEP "glibc" SUBSEP sc, "wall"))
}

# heapledger run against the tracking targets: overhead (ratio - 1) at most a
# third of heaptrack's on every workload, and below LSan's on churn.
function tracking_table(   i, w, sc, hl, ht, ls, miss) {
	sc = scale_of("hl-run")
	if (sc == "" || scale_of("heaptrack") != sc)
		return
	verdict_head("hl-run against the tracking targets",
		     "Overhead is the time ratio to glibc minus 1, at " sc "% size.",
		     "| Workload | hl-run overhead | heaptrack overhead | / 3 | lsan overhead | verdict |",
		     "|---|---:|---:|---:|---:|---|")
	for (i = 1; i <= nwork; i++) {
		w = work[i]
		hl = time_ratio(w, "hl-run", sc)
		ht = time_ratio(w, "heaptrack", sc)
		ls = scale_of("lsan") == sc ? time_ratio(w, "lsan", sc) : ""
		if (hl == "" || ht == "")
			continue
		miss = ""
		if (hl - 1 > (ht - 1) / 3)
			miss = miss ", over a third of heaptrack's"
		if (w == "churn" && ls != "" && hl >= ls)
			miss = miss ", not below LSan's"
		printf("| %s | %.2f | %.2f | %.2f | %s | %s |\n", w, hl - 1, ht - 1, (ht - 1) / 3,
		       ls == "" ? "-" : sprintf("%.2f", ls - 1),
		       miss == "" ? "meets" : "misses: " substr(miss, 3))
	}
	print ""
}

# checks=full against ASan: overhead below ASan's on every workload. ASan
# needs a rebuild, so it has figures for the workloads run.sh builds (the
# synthetic ones, sqlite-src and python-src). A Debian program with a version
# built here (rebuilt_of: "debian:rebuilt ..."; the same program, version and
# allocation-shaping options) is held against that version's ASan overhead;
# one without (cc1), or whose rebuilt version has no ASan figure in this
# run, against 0.70, the lowest ASan overhead the issue measured on Debian's
# python3, sqlite3 and cc1. The verdict says which comparison it used.
function checks_table(   i, n, w, sc, hf, hr, as, ras, ref, against, miss, pairs, pair, src_of) {
	sc = scale_of("hl-full")
	if (sc == "")
		sc = scale_of("hl-run-full")
	if (sc == "")
		return
	n = split(rebuilt_of, pairs, " ")
	for (i = 1; i <= n; i++) {
		split(pairs[i], pair, ":")
		src_of[pair[1]] = pair[2]
	}
	verdict_head("checks=full against ASan",
		     "Overhead is the time ratio to glibc minus 1, at " sc "% size. sqlite-src and python-src are SQLite and CPython built here from source, plain and with ASan, with the options of Debian's sqlite3 and python3 (bench/README.md): the Debian rows are held against their ASan overhead; Debian's cc1 (no ASan build), and a Debian row whose rebuilt version did not run, against 0.70, the lowest ASan overhead the issue measured on python3, sqlite3 and cc1.",
		     "| Workload | hl-full overhead | hl-run-full overhead | asan overhead | verdict |",
		     "|---|---:|---:|---:|---|")
	for (i = 1; i <= nwork; i++) {
		w = work[i]
		hf = scale_of("hl-full") == sc ? time_ratio(w, "hl-full", sc) : ""
		hr = scale_of("hl-run-full") == sc ? time_ratio(w, "hl-run-full", sc) : ""
		as = scale_of("asan") == sc ? time_ratio(w, "asan", sc) : ""
		if (hf == "" && hr == "")
			continue
		ras = (as == "" && (w in src_of) && scale_of("asan") == sc) ? time_ratio(src_of[w], "asan", sc) : ""
		ref = against = ""
		if (as != "") {
			ref = as - 1
			against = "its asan"
		} else if (ras != "") {
			ref = ras - 1
			against = sprintf("%s's asan (%.2f)", src_of[w], ref)
		} else if (!index(synthetic, " " w " ")) {
			ref = 0.7
			against = "the fixed 0.70 bar"
		}
		miss = ""
		if (ref != "" && hf != "" && hf - 1 >= ref)
			miss = miss ", hl-full"
		if (ref != "" && hr != "" && hr - 1 >= ref)
			miss = miss ", hl-run-full"
		printf("| %s | %s | %s | %s | %s |\n", w,
		       hf == "" ? "-" : sprintf("%.2f", hf - 1), hr == "" ? "-" : sprintf("%.2f", hr - 1),
		       as == "" ? "-" : sprintf("%.2f", as - 1),
		       ref == "" ? "no ASan figure" : miss == "" ? "meets: below " against \
		       : "misses: " substr(miss, 3) " not below " against)
	}
	print ""
}

{
	k = $2 SUBSEP $3 SUBSEP $4
	if ($1 == 0) {
		skip[k] = $7
		next
	}
	seen[k] = 1
	wall[k, $1] = $5
	rss[k, $1] = $6
	status[k, $1] = $7
	sum[k, $1] = $8
	if ($9 == "noevents")
		noevents[k] = 1
	if ($3 == "glibc" && $7 == 0 && !(($2, $4) in ref))
		ref[$2, $4] = $8
	if ($1 > maxr)
		maxr = $1
}

END {
	nwork = split(workloads, work, " ")
	nplan = split(plan, steps, " ")
	for (i = 1; i <= nplan; i++) {
		split(steps[i], vs, ":")
		if (!(vs[2] in size_seen)) {
			size_seen[vs[2]] = 1
			sizes[++nsizes] = vs[2]
		}
		if (vs[1] == "glibc")
			continue
		colv[++ncols] = vs[1]
		cols[ncols] = vs[2]
	}
	for (i = 1; i <= nwork; i++)
		for (j = 1; j <= ncols; j++) {
			k = work[i] SUBSEP colv[j] SUBSEP cols[j]
			p = problem(k, work[i], cols[j])
			# a run stopped at --cell-limit is slow, not wrong: its cell says so
			if (p ~ /^\*\*/ && p !~ /^\*\*over /)
				loud = loud "- " work[i] " under " colv[j] ": " p "\n"
		}
	if (loud != "") {
		print "## WRONG RESULTS: these runs failed or did not reproduce glibc's checksum"
		print ""
		printf("%s\n", loud)
	}
	print "Each cell is the median over rounds of (run / glibc run of the same round at the same size): below 1 is"
	print "faster or smaller than glibc. A column marked (P%) ran a workload scaled to P% of its full size, against glibc"
	print "at that size, because the tool is too slow for full size. Every run's output checksum was compared with"
	print "glibc's: a cell that does not show a number says why. n/a: the tool needs a rebuilt program (LSan and ASan"
	print "rows exist for the synthetic workloads, sqlite-src and python-src only). missing: not installed or not built."
	print "heapledger is the plain preload with default options (it captures a stack for every allocation);"
	print "heapledger-nostack is the same library with HEAPLEDGER_OPTIONS=stacks=0: the allocator's own cost."
	print "hl-run is `heapledger run` (tracking, report and SQLite store); a † marks runs where the reporter received no"
	print "events (this libheapledger.so was built without tracking), so they measure the wrapper only."
	print "hl-full is the preload with HEAPLEDGER_OPTIONS=checks=full (guard bytes after every block, a 20 MiB quarantine of"
	print "freed blocks, stacks captured), hl-run-full is `heapledger run --checks full`: against asan, a rebuilt program."
	print ""
	table("Time, ratio to glibc", "wall")
	table("Peak RSS, ratio to glibc", "rss")
	glibc_table()
	targets_table("heapledger")
	targets_table("heapledger-nostack")
	tracking_table()
	checks_table()
	print "## Reference: figures from the issue"
	print ""
	print "- Time ratio to glibc, churn / 8-thread ring / realloc growth / mixed: mimalloc 0.51 / 0.46 / 0.42 / 0.24;"
	print "  tcmalloc 0.50 / 0.37 / 0.35 / 0.23; jemalloc 0.60 / 0.62 / 1.19 / 3.92."
	print "- Targets for heapledger: faster than glibc on every synthetic workload, within 1.25x mimalloc's time on each;"
	print "  real programs within 5% of glibc; peak RSS <= 1.2x glibc."
	print "- Targets for hl-run: overhead (time ratio - 1) at most a third of heaptrack's on every workload, below"
	print "  LSan's on churn."
	print "- Target for checks=full: overhead below ASan's on every workload (ASan in the issue: 5-20x glibc's time on"
	print "  the synthetic workloads, 1.7-3.2x on python3, sqlite3 and cc1)."
}
