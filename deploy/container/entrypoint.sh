#!/usr/bin/env bash
# Entry point of the ufo batch image (deploy/container/Containerfile): runs ONE shard of the
# suite on a private desktop of its own (Xvfb, session bus, AT-SPI bus, window manager),
# started by ufo and ended with it. The shard comes from the engine's array index
# (`--shard auto`: JOB_COMPLETION_INDEX with UFO_SHARD_COUNT on Kubernetes,
# SLURM_ARRAY_TASK_ID, BATCH_TASK_INDEX, AWS_BATCH_JOB_ARRAY_INDEX with UFO_SHARD_COUNT), or
# UFO_SHARD=K/N. Results go to $UFO_RESULTS/shard-K-of-N; run again, the shard resumes.
#
#   UFO_SUITE    task files or a folder of them        (default /suite)
#   UFO_RESULTS  the shared results folder              (default /results)
#   UFO_SHARD    auto or K/N                            (default auto)
#   UFO_CONFIRM  ask|yes|no for actions to confirm       (default no: nobody is there to ask)
#   UFO_BIN      the ufo binary                         (default ufo on PATH)
# Further arguments go to `ufo batch` (e.g. --llm openai:gpt-4o, --task-timeout 900).
#
# Exit status: 0 when the shard ran to its end, whatever its tasks' verdicts (a failed task is
# a result, not a reason for the engine to run the shard again); 2 bad usage (a missing or
# inconsistent array variable: retrying cannot help); anything else lets the engine retry the
# shard, which then skips the tasks it already finished.
set -uo pipefail

ufo="${UFO_BIN:-ufo}"
"$ufo" batch "${UFO_SUITE:-/suite}" \
  --desktop private \
  --shard "${UFO_SHARD:-auto}" \
  --out "${UFO_RESULTS:-/results}" \
  --confirm "${UFO_CONFIRM:-no}" \
  --quiet \
  "$@"
rc=$?
case "$rc" in
  0 | 1) exit 0 ;;
  *) exit "$rc" ;;
esac
