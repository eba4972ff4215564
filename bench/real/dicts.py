# dicts.py: a Python workload for bench/run.sh: build dicts of strings, look
# them up, then drop them, round after round. Keys stay in pymalloc's small
# objects; values of up to ~2 KB and the dict tables go to malloc.
# usage: python3 dicts.py [scale_percent]; prints "checksum HEX".
import sys

scale = int(sys.argv[1]) if len(sys.argv) > 1 else 100
rounds = max(1, 24 * scale // 100)
entries = 40000
state = 12345
total = 0

for r in range(rounds):
    table = {}
    for i in range(entries):
        # Park-Miller: the same sequence on every Python, no hash seed needed
        state = state * 16807 % 2147483647
        key = "k%d.%d" % (r, state)
        table[key] = "v" * (state % 2000) + key
    for key, value in table.items():
        total = (total * 31 + len(value) + len(key)) & 0xFFFFFFFFFFFFFFFF
    words = [v[:8] for v in table.values()]
    total = (total + len(set(words))) & 0xFFFFFFFFFFFFFFFF
    del table, words

print("checksum %016x" % total)
