#!/bin/sh
# grape predict --csv on every file of the shared NeuSight data: each must
# predict all its rows. Skips (77) when ../shared/data is not beside the checkout
# (GRAPE_NEUSIGHT_DIR names another copy).
grape=$1 dir=${GRAPE_NEUSIGHT_DIR:-$2}
[ -d "$dir/train" ] || { echo "skip: $dir absent"; exit 77; }
n=0
for f in "$dir"/train/*/*.csv.gz; do
  msg=$("$grape" predict --csv "$f" 2>&1 >/dev/null) || { echo "$f: $msg"; exit 1; }
  case $msg in *" 0 skipped"*) ;; *) echo "$f: $msg"; exit 1 ;; esac
  n=$((n + 1))
done
echo "$n files predicted"
[ "$n" -gt 0 ]
