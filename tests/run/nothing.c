/*
 * tests/run/nothing.c: an empty preload library. Synthetic runs set
 * HEAPLEDGER_LIB to it so `heapledger run` preloads something harmless and
 * only fake_client's own connections reach the reporter.
 */
int hl_test_nothing_preloaded;
