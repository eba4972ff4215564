#!/usr/bin/env bash
# ui/refresh-assets.sh: refreshes the vendored chart and flame-graph
# libraries under ui/assets/vendor/ from npm, with their licences. Run it by
# hand to move to new versions (edit the pins below), look at the pages, and
# commit the result: building heapledger never needs npm or the network.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
pins=(uplot@1.6.32 d3@7.9.2 d3-flame-graph@5.0.0)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --no-audit --no-fund "${pins[@]}" >/dev/null)
m=$work/node_modules
out=assets/vendor
mkdir -p "$out"
cp "$m/uplot/dist/uPlot.iife.min.js" "$m/uplot/dist/uPlot.min.css" "$out/"
cp "$m/d3/dist/d3.min.js" "$out/"
cp "$m/d3-flame-graph/dist/d3-flamegraph.umd.min.js" "$m/d3-flame-graph/dist/d3-flamegraph.css" "$out/"
for p in uplot d3 d3-flame-graph; do
	v=$(node -p "require('$m/$p/package.json').version")
	{ echo "$p $v (npm), vendored by ui/refresh-assets.sh"; echo; cat "$m/$p/LICENSE"; } \
		>"$out/LICENSE.$p.txt"
done
echo "refreshed: ${pins[*]}"
