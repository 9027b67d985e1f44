#!/usr/bin/env bash
# Submit a ufo batch to Slurm as an array of N shards and the merge after it:
#   deploy/slurm/submit.sh SUITE RESULTS N [ufo batch options]
# Prints the array's and the merge's job ids. RESULTS must be on storage every node sees; the
# merged results land in RESULTS/merged. Extra sbatch options: SBATCH_* variables (e.g.
# SBATCH_PARTITION) or UFO_SBATCH_ARGS="--time=4:00:00 --array-throttle...".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
suite="${1:?usage: $0 SUITE RESULTS N [ufo batch options]}"
results="${2:?usage: $0 SUITE RESULTS N [ufo batch options]}"
n="${3:?usage: $0 SUITE RESULTS N [ufo batch options]}"
shift 3
case "$n" in
  '' | *[!0-9]* | 0) echo "N must be a whole number of shards, 1 or more (got $n)" >&2; exit 2 ;;
esac
suite="$(cd "$(dirname "$suite")" && pwd)/$(basename "$suite")"
case "$results" in /*) whole="$results" ;; *) whole="$PWD/$results" ;; esac
case "$whole" in
  *\\*)
    echo "RESULTS $whole holds a backslash: Slurm's --output pattern takes one as \"expand nothing\" and drops it, so the jobs' output could not be written; choose a folder without one" >&2
    exit 2
    ;;
esac
mkdir -p "$results"
results="$(cd "$results" && pwd)"
# --output is a filename pattern: Slurm expands %A, %j, ... anywhere in it, so a literal % of the
# folder's name is written %% (the scripts get RESULTS as it is)
out_dir="${results//[%]/%%}"
# shellcheck disable=SC2086
array="$(sbatch --parsable ${UFO_SBATCH_ARGS:-} --array="0-$((n - 1))" \
  --output="$out_dir/slurm-%A_%a.out" "$here/ufo-batch.sbatch" "$suite" "$results" "$@")"
array="${array%%;*}"
merge="$(sbatch --parsable --dependency="afterany:$array" --output="$out_dir/slurm-merge-%j.out" \
  "$here/merge.sbatch" "$results")"
merge="${merge%%;*}"
echo "$array $merge"
