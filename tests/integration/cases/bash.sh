# Integration case: bash arrays, associative arrays, string operations,
# command substitution subshells and a pipeline of coreutils.
set -euo pipefail

declare -a items=()
declare -A counts=()
for ((i = 0; i < 4000; i++)); do
	word="item${i}-$(( (i * 37) % 101 ))"
	items+=("$word")
	key=${word##*-}
	counts[$key]=$(( ${counts[$key]:-0} + 1 ))
done

upper=""
for ((i = 0; i < 300; i++)); do
	w=${items[i]}
	w=${w//item/IT}
	upper+="${w^^}:${#w};"
done

sub=$( (for k in "${!counts[@]}"; do echo "$k ${counts[$k]}"; done) | sort -n | head -n 5 | tr '\n' ' ')
total=$(printf '%s\n' "${items[@]}" | cut -d- -f2 | sort | uniq -c | sort -k1,1nr -k2,2n | head -n 3 | awk '{s += $1} END {print s}')
# Nested command substitutions on purpose: each level is another subshell.
# shellcheck disable=SC2005
nested=$(( $(echo "$(seq 1 200 | paste -sd+)") ))

echo "bash items=${#items[@]} keys=${#counts[@]} upper_len=${#upper} upper_tail=${upper: -24}"
echo "bash sub=[$sub] total=$total nested=$nested sum=$(cksum <<<"$upper" | cut -d' ' -f1)"
