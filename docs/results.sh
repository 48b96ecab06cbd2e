#!/usr/bin/env bash
# Makes the Fashion-MNIST convergence table again: HyFDCA with the default
# step (block) and the published one (paper, IIC tuned by a small random
# search as in the HyFDCA paper's supplement, sec. 2.3) on Fashion-MNIST,
# lambda 1e-3. The dated table is the run of 2026-11-23, with the step
# that was the default then (hyfed, since retired and refused):
# docs/results/2026-11-23-fashion-mnist-table.md.
# Usage: docs/results.sh [rounds] > docs/results.md   (about 70 minutes on 2 cores)
#        STEPS=block docs/results.sh                   (the default step only)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-2500}
TUNE_ROUNDS=${TUNE_ROUNDS:-300}
HYFED=${HYFED:-bin/hyfed}
DATA=fashion-mnist
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }

echo "computing P* with hyfed central..." >&2
PSTAR=$($HYFED central --data $DATA --lambda 1e-3 --quiet | field "['primal']")
echo "P* = $PSTAR" >&2

# tune_iic PARTITION FRACTION: the IIC of the best final primal among
# log-uniform candidates in [clients/N, 1] (seeded), each run TUNE_ROUNDS.
tune_iic() {
  local best="" bestp=1e300
  for iic in $(python3 -c "
import random, math
r = random.Random(7)
lo = math.log10(8/60000)
print(' '.join('%.3g' % 10**r.uniform(lo, 0) for _ in range(5)))"); do
    p=$($HYFED experiment --data $DATA --partition "$1" --fraction "$2" --lambda 1e-3 --step paper \
        --iic "$iic" --rounds "$TUNE_ROUNDS" --pstar "$PSTAR" --quiet | field "['primal']")
    echo "  tune $1 f=$2 iic=$iic -> P=$p" >&2
    if python3 -c "import sys; sys.exit(0 if float('$p') < float('$bestp') else 1)"; then best=$iic; bestp=$p; fi
  done
  echo "$best"
}

echo "| partition | fraction | step | IIC | rounds to 1e-1 | to 1e-2 | to 1e-3 | final relative loss | held-out accuracy | seconds |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for part in quadrants:2 horizontal:10 vertical:4; do
  for frac in 1 0.5; do
    for step in ${STEPS:-block paper}; do
      iic=0.2
      if [ $step = paper ]; then iic=$(tune_iic $part $frac); fi
      echo "running $part f=$frac $step iic=$iic" >&2
      $HYFED experiment --data $DATA --partition $part --fraction $frac --lambda 1e-3 --step $step \
        --iic $iic --rounds "$ROUNDS" --pstar "$PSTAR" --quiet | python3 -c "
import json, sys
d = json.load(sys.stdin)
r = lambda k: str(d['rounds_to'][k]) if d['rounds_to'][k] >= 0 else 'never'
print('| %s | %s | %s | %s | %s | %s | %s | %.3g | %.4f | %.0f |' % ('$part', '$frac', '$step', '$iic',
      r('0.1'), r('0.01'), r('0.001'), d['relative_loss'], d['accuracy'], d['seconds']))"
    done
  done
done
echo
echo "P* = $PSTAR (hyfed central, lambda 1e-3); $ROUNDS rounds; command: docs/results.sh $ROUNDS"
