#!/bin/sh
# The predictor end to end, from the repository root after `ninja -C build`:
#   bench/predict/eval.sh [DATA_DIR] [OUT_DIR]
# DATA_DIR: NeuSight's training rows (neusight/train, laid out as
# docs/predictor.md's "The full NeuSight data set" says);
# OUT_DIR: where the held-out predictions go (grape-eval).
# Prints, per evaluation group, grape against the baselines (roofline:
# wave-quantised, NeuSight's tile and wave structure without its MLP; Li
# et al.) on held-out shapes, held-out shape families and held-out GPUs,
# with the 80% intervals' coverage and width per regime, then the run-level
# prediction of examples/decode on an H100. Every fit is grape train's own;
# the held-out rows never inform the fit that predicts them.
set -eu
data=${1:-neusight/train}
out=${2:-grape-eval}
grape=build/tools/grape
mkdir -p "$out"
for split in shapes families; do
  GRAPE_CV_DUMP="$out/$split.csv" "$grape" train --quiet --cv-$split "$data" > "$out/$split.txt"
done
python3 bench/predict/cv_table.py "held-out shapes=$out/shapes.csv" \
  "held-out shape families=$out/families.csv"
echo "## held-out GPUs (leave one GPU out; transfer regime)"
echo
"$grape" train --quiet --cv "$data" | sed -n '/^group/,/^all/p'
echo
if [ -x build/examples/decode ]; then
  echo "## run level: examples/decode on an H100"
  echo
  "$grape" run --predict-gpu H100 -- build/examples/decode 2>&1 | grep 'predicted on'
fi
