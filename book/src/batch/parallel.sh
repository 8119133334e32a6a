# GNU parallel: the 10 shares of a 10,000-seed sweep, one per job slot (add -S host1,host2 to
# spread them over machines that share this directory), then the merge. Each share's runs go
# to its part file; what the merge prints is what the unsplit sweep would have printed.
seq 10 | parallel 'resim sweep batch-sweep.ron --seeds 1..10000 --partition {}/10 -j 1 --out results/part-{}.jsonl >/dev/null; [ $? -le 1 ]'
resim merge results/part-*.jsonl
