# git on a temporary repository: init, many files, commits, a branch, a log.
set -e
git init -q repo
cd repo
git config commit.gpgsign false
i=0
while [ $i -lt 200 ]; do
  printf 'file %s\nline %s\n' "$i" "$(seq 1 $((i % 50)) | tr '\n' ' ')" > "f$i.txt"
  i=$((i + 1))
done
git add -A && git commit -q -m first
git checkout -q -b side
sed -i 's/line/LINE/' f1*.txt && git commit -q -am second
git checkout -q - 2>/dev/null || git checkout -q master 2>/dev/null || git checkout -q main
git merge -q --no-edit side
git log --oneline | cat
git diff HEAD~1 --stat | tail -1
git gc -q --aggressive 2>/dev/null
git count-objects -v | grep -v size
