#!/usr/bin/env bash
# The open campaigns (issues 41 and 42), started again on any machine in one command, and landed in another.
#
#   bash benchmarks/campaign.sh start   # from a git-archive copy of HEAD outside the work tree, at nice 19
#   bash benchmarks/campaign.sh land    # regenerate the summaries from the run folders (no commit)
#   bash benchmarks/campaign.sh status  # what runs now, and each queue's last lines
#
# One 2-CPU Ray cluster; every sweep joins it with --cpus-per-run 1 --max-concurrent 1, so that each queue keeps one
# CPU (without --max-concurrent, Ray gave a freed CPU to whichever sweep had a run pending: 2026-11-29 the downstream
# sweep took both and core A's runs waited). Run folders live in $RUNS (default /work/runs; the work tree's runs/
# links to it): the sweeps resume what is there; the downstream sweeps also skip the runs landed in
# benchmarks/results/downstream/{paper,ablation}/runs (start copies them into their run roots), and the comparison
# sweeps skip the runs landed at their budget in results/comparison[/exploration]/finished_runs (sweep_in: the
# sweep's --skip). Run states do not outlive every
# machine (2026-11-29: a new machine lost a width-1024 Kitchen run at epoch 410), so the queue puts first the runs
# that finish within a session (benchmarks/README.md: "Campaigns").
#
# Core A: lookahead_two on HalfCheetahGoal, QuadrupedGoal and AntMultiGoals seeds 0-3, the reference Hurdle's flat SAC
# seeds 0-3, lookahead_two on HumanoidGoal, v0.3 on Ant seed 1; core B: the reference Hurdle's flat SAC seeds 4 and 5,
# lookahead_two on AntMultiGoals seeds 4-7, the reference Hurdle's seeds 6 and 7, v0.3 on Quadruped seed 1 (both
# behind issue 42's landed runs, which the sweeps skip). Each queue's order and why: core_a() and core_b() below.
# A queue goes on past a sweep whose runs failed (exit 1: the errors are in its log) and stops on anything else (a
# sweep stopped by a signal, a Ray cluster that is gone).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-/work/runs}
SRC=${CAMPAIGN_SRC:-/work/campaign/src}
PY=${PYTHON:-$ROOT/.venv/bin/python}
BIN=$(dirname "$PY")

start() {
  mkdir -p "$RUNS" "$RUNS/downstream/runs" "$RUNS/downstream_a/runs" "$RUNS/downstream_ablation/runs" \
    "$RUNS/humanoid_goal/runs" "$RUNS/humanoid_goal_b/runs" "$RUNS/cheetah_hurdle_v1/runs" \
    "$RUNS/cheetah_hurdle_v1_b/runs"
  [ -e "$ROOT/runs" ] || ln -s "$RUNS" "$ROOT/runs"
  # the landed downstream runs: the sweep skips a finished run file of the same settings
  local root
  for root in downstream downstream_a; do
    cp -n "$ROOT"/benchmarks/results/downstream/paper/runs/*.json "$RUNS/$root/runs/"
  done
  cp -n "$ROOT"/benchmarks/results/downstream/ablation/runs/*.json "$RUNS/downstream_ablation/runs/" 2>/dev/null || true
  for root in humanoid_goal humanoid_goal_b; do
    cp -n "$ROOT"/benchmarks/results/downstream/humanoid_goal/runs/*.json "$RUNS/$root/runs/"
  done
  for root in cheetah_hurdle_v1 cheetah_hurdle_v1_b; do
    cp -n "$ROOT"/benchmarks/results/downstream/cheetah_hurdle_v1/runs/*.json "$RUNS/$root/runs/" 2>/dev/null || true
  done
  "$BIN/ray" stop >/dev/null 2>&1 || true
  rm -rf "$SRC" && mkdir -p "$SRC"
  (cd "$ROOT" && git archive HEAD | tar -x -C "$SRC")
  ln -sfn "$RUNS" "$SRC/runs"
  cd "$SRC"
  export PYTHON=$PY RUNS CAMPAIGN_SRC=$SRC
  export PYTHONPATH=$SRC OMP_WAIT_POLICY=PASSIVE MUJOCO_GL=egl TUNE_MAX_PENDING_TRIALS_PG=1 PATH=$BIN:$PATH
  # One token-authentication mode for the cluster and every sweep that joins it: Ray 2.60 turns token auth on in a
  # process that finds ~/.ray/auth_token (written by any local ray.init, a test's too), and a cluster started before
  # the file existed ends that process's actors (the failed trials of 2026-12-01 00:30).
  "$BIN/ray" get-auth-token --generate > /dev/null 2>&1
  export RAY_AUTH_MODE=token
  nice -n 19 ray start --head --num-cpus 2 --include-dashboard false > "$RUNS/ray.log" 2>&1
  nohup nice -n 19 bash "$SRC/benchmarks/campaign.sh" core-a > "$RUNS/core_a.log" 2>&1 &
  nohup nice -n 19 bash "$SRC/benchmarks/campaign.sh" core-b > "$RUNS/downstream.log" 2>&1 &
  echo "started; logs: $RUNS/core_a.log $RUNS/downstream.log"
}

seeds() {  # a copy of a sweep file with the given seeds (the same run folders and configs: only the seed list differs)
  local out=$SRC/sweeps/$(basename "$1" .yaml)_s${2// /_}.yaml
  mkdir -p "$SRC/sweeps"
  # written aside and renamed: both queues may write the same file at their start while the other reads it
  sed "s/^seeds: \[0, 1\]/seeds: [${2// /, }]/" "$1" > "$out.$$" && mv "$out.$$" "$out"
  # a file whose seeds line is not "seeds: [0, 1]" would run every seed: say so rather than run them twice
  grep -q "^seeds: \[${2// /, }\]$" "$out" || { echo "seeds: no 'seeds: [0, 1]' line in $1 to narrow" >&2; exit 2; }
  echo "$out"
}

# A run root takes one sweep at a time, so core B's share of the comparison goes to a root of its own, which
# comparison.py reads beside the first (--run-root A B); folders under $RUNS (land() reads them as runs/NAME).
COMPARISON_ROOTS=(comparison comparison_b)

sweep_in() {  # a comparison sweep in the run root $RUNS/$1 (then the sweep file and the sweep's other arguments)
  local root=$1 file=$2 landed name skips=()
  shift 2
  # The runs landed at the sweep file's budget (results/comparison[/exploration]/finished_runs) are left out: a
  # comparison sweep sees run folders only, and a new machine has none, so it would train them again.
  local out=benchmarks/results/comparison
  case $(basename "$file") in exploration*) out=$out/exploration ;; esac
  landed=$("$PY" benchmarks/comparison.py --sweep-file "$file" --out "$out" --landed) \
    || { echo "the landed runs of $file could not be read" >&2; return 2; }
  for name in $landed; do skips+=(--skip "$name"); done
  "$PY" -m pretrain sweep "$file" "$@" "${skips[@]}" --run-root "$RUNS/$root" --cpus-per-run 1 --max-concurrent 1 \
    --address auto
}

sweep() { sweep_in "${COMPARISON_ROOTS[0]}" "$@"; }    # core A's run root
sweep_b() { sweep_in "${COMPARISON_ROOTS[1]}" "$@"; }  # core B's run root

then_next() {  # run a sweep; the queue goes on after failed runs (exit 1), and stops on any other failure
  "$@"
  local rc=$?
  [ "$rc" -le 1 ] || { echo "the queue stops: exit $rc from $*" >&2; exit "$rc"; }
}

downstream_in() {  # a downstream sweep file's runs in the run root $RUNS/$2 (then the sweep's other arguments)
  local file=$1 root=$2
  shift 2
  "$PY" benchmarks/downstream.py sweep "$file" --run-root "$RUNS/$root" --cpus-per-run 1 --max-concurrent 1 \
    --address auto "$@"
}
downstream() { downstream_in benchmarks/downstream.yaml downstream --only "$@"; }  # agent, protocols, tasks, flags

core_a() {
  cd "$SRC"
  set +e
  # Issue 42's runs come first while any is not landed (a landed run is skipped: sweep_in). On 2026-12-02 HalfCheetah's
  # and Ant's DADS at lr 1e-4 seed 1 (the last two) ran side by side, Ant's on core B, so that both finish within one
  # session (about 2.2 h each on that machine): behind HalfCheetah's on core A, Ant's would not have.
  then_next sweep "$(seeds benchmarks/comparison.yaml 1)" --only half_cheetah --only dads_lr0.0001
  # then issue 41's: the lookahead_two reference (a look-ahead two skill steps deep, pretrain/downstream/reference.py)
  # on the tasks where it was not landed, cheapest first (8 seeds each; about 0.2 idle h on HalfCheetahGoal, 0.65 on
  # QuadrupedGoal, 0.8 on AntMultiGoals: ten times the greedy look-ahead's seconds), then flat SAC on the reference
  # code's Hurdle (`cheetah_hurdle_v1`) seeds 0-3 (4 x 0.43; core B runs seeds 4-7), then lookahead_two on HumanoidGoal
  # (0.9: last, since a stronger reference can only widen the gap of a target already missed there), then v0.3 on Ant
  # seed 1 (1.3: a variant). Every other run of this queue's earlier order has landed (the sweeps skip them). On
  # 2026-12-07 a new machine lost the run states of the Hurdle's flat SAC seeds and of a side queue of lookahead_two.
  # AntMultiGoals' seeds take 7-8 min each (2026-12-08, beside one queue; 13 beside the test suite), so they are
  # split: seeds 0-3 here, 4-7 on core B.
  then_next downstream_in benchmarks/downstream.yaml downstream_a --only lookahead_two cheetah_goal quadruped_goal
  then_next downstream_in benchmarks/downstream.yaml downstream_a --only lookahead_two ant_multigoals --seeds 0 1 2 3
  then_next downstream_in benchmarks/cheetah_hurdle_v1.yaml cheetah_hurdle_v1 --only flat paper --seeds 0 1 2 3
  then_next downstream_in benchmarks/humanoid_goal.yaml humanoid_goal --only lookahead_two
  then_next downstream_in benchmarks/downstream.yaml downstream_a --only controller v0.3 ant_multigoals --seeds 1
}

core_b() {
  cd "$SRC"
  set +e
  # Ant's DADS at lr 1e-4 seed 1 (issue 42's last run, landed: the sweep skips it), then issue 41's: flat SAC on
  # `cheetah_hurdle_v1` seeds 4 and 5 (0.43 idle h each, a run root of its own: core A runs seeds 0-3), lookahead_two
  # on AntMultiGoals seeds 4-7 (core A runs 0-3), flat SAC on `cheetah_hurdle_v1` seeds 6 and 7, then v0.3 on
  # Quadruped seed 1 (1.3, a variant). Every other run of core B's earlier queue has landed (flat SAC's 8 seeds on
  # every task, v0.3 seed 0, HumanoidGoal's seeds; the downstream sweeps skip landed runs: start copies them in).
  then_next sweep_b "$(seeds benchmarks/comparison.yaml 1)" --only ant --only dads_lr0.0001
  then_next downstream_in benchmarks/cheetah_hurdle_v1.yaml cheetah_hurdle_v1_b --only flat paper --seeds 4 5
  then_next downstream lookahead_two ant_multigoals --seeds 4 5 6 7
  then_next downstream_in benchmarks/cheetah_hurdle_v1.yaml cheetah_hurdle_v1_b --only flat paper --seeds 6 7
  then_next downstream controller v0.3 quadruped_goal --seeds 1
}

land_finished() {  # copy the finished run files of run root $1 into the landed folder $2; true if any
  local finished
  finished=$(grep -l '"finished": true' "$1"/runs/*.json 2>/dev/null || true)
  [ -n "$finished" ] || return 1
  mkdir -p "$2"
  cp -t "$2" $finished
}

land() {
  cd "$ROOT"
  export MUJOCO_GL=egl OMP_WAIT_POLICY=PASSIVE
  local v1=false humanoid=false
  land_finished runs/downstream benchmarks/results/downstream/paper/runs || true
  land_finished runs/downstream_a benchmarks/results/downstream/paper/runs || true
  nice -n 5 "$PY" benchmarks/downstream.py summary runs/downstream/runs runs/downstream_a/runs \
    benchmarks/results/downstream/paper/runs --out benchmarks/results/downstream/paper
  if land_finished runs/downstream_ablation benchmarks/results/downstream/ablation/runs; then
    # beside the HalfCheetah tasks' runs of the campaign alone (their protocols and reference controllers)
    local task_runs
    task_runs=$(mktemp -d)
    cp -t "$task_runs" benchmarks/results/downstream/paper/runs/cheetah_{goal,hurdle}-*.json
    nice -n 5 "$PY" benchmarks/downstream.py summary "$task_runs" benchmarks/results/downstream/ablation/runs \
      --out benchmarks/results/downstream/ablation
    rm -rf "$task_runs"
  fi
  land_finished runs/cheetah_hurdle_v1 benchmarks/results/downstream/cheetah_hurdle_v1/runs && v1=true
  land_finished runs/cheetah_hurdle_v1_b benchmarks/results/downstream/cheetah_hurdle_v1/runs && v1=true
  if $v1; then
    nice -n 5 "$PY" benchmarks/downstream.py summary benchmarks/results/downstream/cheetah_hurdle_v1/runs \
      --out benchmarks/results/downstream/cheetah_hurdle_v1
  fi
  land_finished runs/humanoid_goal benchmarks/results/downstream/humanoid_goal/runs && humanoid=true
  land_finished runs/humanoid_goal_b benchmarks/results/downstream/humanoid_goal/runs && humanoid=true
  if $humanoid; then
    nice -n 5 "$PY" benchmarks/downstream.py summary benchmarks/results/downstream/humanoid_goal/runs \
      --out benchmarks/results/downstream/humanoid_goal
  fi
  local roots=("${COMPARISON_ROOTS[@]/#/runs/}")
  nice -n 5 "$PY" benchmarks/comparison.py --run-root "${roots[@]}"
  if [ -n "$(ls -d runs/comparison{,_b}/ant-{icm,lbs,rnd,apt,disagreement,aps}-seed=* 2>/dev/null)" ]; then
    nice -n 5 "$PY" benchmarks/comparison.py --run-root "${roots[@]}" \
      --sweep-file benchmarks/exploration.yaml --out benchmarks/results/comparison/exploration --goals 0
  fi
  git status --short
}

status() {
  ps -eo pid,etime,args | grep -E "campaign.sh core|pretrain sweep|downstream.py sweep" | grep -v grep \
    || echo "no queue runs"
  local log
  for log in "$RUNS/core_a.log" "$RUNS/downstream.log"; do
    echo "== $log"
    [ -f "$log" ] || continue
    { grep -E "^(trial|run|sweep|downstream sweep|running|core|the queue)" "$log" || true; } | tail -n 3
  done
  # a downstream run prints nothing until it ends: its run file's last evaluation says how far it is
  "$PY" - "$RUNS" <<'EOF'
import json, sys, time
from pathlib import Path

for path in sorted(Path(sys.argv[1]).glob("*/runs/*.json")):
    run = json.loads(path.read_text())
    if not run.get("finished") and run.get("points"):
        steps, mean_return = run["points"][-1][:2]
        minutes = (time.time() - path.stat().st_mtime) / 60
        print(f"unfinished {path.stem}: {steps:,} steps, return {mean_return} ({minutes:.0f} min ago)")
EOF
}

case "${1:-}" in
  start) start ;;
  core-a) core_a ;;
  core-b) core_b ;;
  land) land ;;
  status) status ;;
  *) echo "usage: bash benchmarks/campaign.sh start | land | status" >&2; exit 2 ;;
esac
