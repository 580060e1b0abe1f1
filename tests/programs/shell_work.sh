# A shell script's usual load: 300 short pipelines (seq | tr), each two
# programs that live a millisecond.  What it measures is the allocator's
# cost to start a process, fork and exit, not its steady state.
i=0
while [ $i -lt 300 ]; do
  seq 1 $((i % 20 + 1)) | tr '\n' ' ' > /dev/null
  i=$((i + 1))
done
