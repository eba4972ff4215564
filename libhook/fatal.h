/*
 * libhook/fatal.h: signals whose default action ends the process (fatal.c).
 *
 * The hook keeps a handler on each such signal the program leaves at its
 * default (through sigchain.c, the one place that interposes on signal
 * actions): it reports where the process crashed, runs the exit scan once
 * and lets the signal end the process as it would have. A part of the hook
 * that must see a fault first (a guard page it placed) is a "first"
 * function in sigchain.c: it runs before this report.
 */
#ifndef HL_FATAL_H
#define HL_FATAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Joins the signal chain (constructor, after the options). */
void hl_fatal_init(void);
/* True while a delivery of `sig` would reach the report (the program left
 * it at its default): abort() then lets the signal report. */
bool hl_fatal_handles(int sig);

/* The crash being reported, for the standalone report and the stream. */
struct hl_fatal_note {
	int signal;          /* 0: no fatal signal */
	int code;            /* si_code */
	uint64_t address;    /* si_addr for faults */
	uint32_t stack_id;   /* where the thread was, 0 if unknown */
};
/* The note of the fatal signal being reported, or NULL. */
const struct hl_fatal_note *hl_fatal_current(void);
/* Standalone: valgrind's lines for it ("Process terminating with default
 * action of signal 11 (SIGSEGV)", the fault, the stack), if there is one. */
void hl_fatal_print(int fd);

#endif /* HL_FATAL_H */
