"""bench/real/deep.py [LEVELS] [ROUNDS]: python3 allocating at the bottom of
a deep C stack. Each level calls the next through map(), a C function
calling back into Python, so every level adds C frames of the interpreter
(about 6 with python 3.11, whose Python-to-Python calls add none): the
stacks of interpreters and callback-heavy C code that a 64-frame cut leaves
without their roots. bench/depth.sh counts its instructions."""
import sys


def level(n):
    if n == 0:
        return [bytearray(1024) for _ in range(16)]
    return list(map(level, [n - 1]))[0]


def main():
    levels = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    kept = 0
    for _ in range(rounds):
        kept += len(level(levels))
    print(kept)


main()
