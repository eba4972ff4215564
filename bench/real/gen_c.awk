# gen_c.awk: writes a C file for `gcc -O2 -c` (bench/run.sh): many functions
# with loops, switches and struct copies, so cc1 spends its time in the
# optimizer's many small allocations, as on real code.
# usage: awk -v functions=N -f gen_c.awk > big.c
BEGIN {
	print "#include <stddef.h>"
	print "struct rec { int a, b, c; double x; char tag[16]; };"
	print "extern int sink(int);"
	for (f = 0; f < functions; f++) {
		printf("int fn%d(struct rec *r, size_t n, int k)\n{\n", f)
		print "\tint acc = k;"
		print "\tfor (size_t i = 0; i < n; i++) {"
		print "\t\tstruct rec t = r[i];"
		printf("\t\tswitch ((t.a + %d) & 7) {\n", f)
		for (c = 0; c < 8; c++)
			printf("\t\tcase %d: acc += t.b * %d + (int)(t.x * %d.5); t.c ^= acc >> %d; break;\n",
			       c, c + f % 13, c + 1, c % 5 + 1)
		print "\t\t}"
		print "\t\tif (t.tag[(i + k) & 15] == 'x')"
		printf("\t\t\tacc = sink(acc + %d);\n", f)
		print "\t\tr[(i * 7) % n] = t;"
		print "\t}"
		if (f > 0)
			printf("\tif (acc & 1)\n\t\tacc += fn%d(r, n / 2, acc);\n", f - 1)
		print "\treturn acc;\n}\n"
	}
}
