# Integration case: CPython builds and drops large dicts of strings and a few
# lists, so the hook sees many small allocations, resizes and frees. Prints a
# checksum that depends only on the data, never on addresses or hash seeds.
import zlib

def build_round(round_no, size):
    table = {}
    for i in range(size):
        key = "key-%d-%d" % (round_no, i)
        table[key] = key[::-1] * (1 + i % 5)
    # Deleting a third makes dict resizes and string frees interleave.
    for i in range(0, size, 3):
        del table["key-%d-%d" % (round_no, i)]
    return table

def main():
    checksum = 0
    kept = []
    for round_no in range(12):
        table = build_round(round_no, 40000)
        words = sorted(table.values(), key=len)
        joined = ",".join(words[:2000])
        checksum = zlib.crc32(joined.encode(), checksum)
        checksum = zlib.crc32(str(len(table)).encode(), checksum)
        # Keep a few slices alive across rounds, drop the rest.
        kept.append(words[::997])
        if len(kept) > 4:
            kept.pop(0)
        del table, words, joined
    nested = [[str(i * j) for j in range(50)] for i in range(2000)]
    checksum = zlib.crc32(repr(nested[1234]).encode(), checksum)
    print("python3 rounds=12 kept=%d checksum=%08x" % (sum(map(len, kept)), checksum))

main()
