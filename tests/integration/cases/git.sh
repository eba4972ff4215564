# Integration case: git init, add, commit and log in a fresh repository with
# fixed identities and dates, so commit ids are the same on every run. Run by
# same_output.sh inside an empty temporary directory with HOME set to it.
set -euo pipefail

export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Heap GIT_AUTHOR_EMAIL=heap@example.org
export GIT_COMMITTER_NAME=Ledger GIT_COMMITTER_EMAIL=ledger@example.org

git init -q -b main repo
cd repo
for n in 1 2 3 4 5 6; do
	export GIT_AUTHOR_DATE="2024-01-0${n}T12:00:00Z" GIT_COMMITTER_DATE="2024-01-0${n}T12:30:00Z"
	# One awk per commit, not one process per file: the case is about git.
	awk -v n="$n" 'BEGIN {
		for (f = 1; f <= 20; f++) {
			name = "file" f ".txt"
			for (l = f; l <= f * n * 20; l++)
				print l > name
			close(name)
		}
	}'
	mkdir -p "dir$n"
	printf 'commit %s\n' "$n" > "dir$n/README"
	git add -A
	git commit -q -m "commit $n" -m "Body of commit $n."
done
git rm -q file7.txt
GIT_AUTHOR_DATE=2024-02-01T00:00:00Z GIT_COMMITTER_DATE=2024-02-01T00:00:00Z git commit -q -m "remove file7"
git log --format='%H %an <%ae> %ad %s' --date=iso-strict
git log --stat --format='%h %s' -n 2
git diff --shortstat HEAD~3 HEAD
git rev-parse 'HEAD^{tree}'
git count-objects
