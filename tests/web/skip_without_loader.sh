#!/bin/sh
# Runs a web test ("$@" after the loader directory $1) only when web.npm_ci installed the loader's
# packages there; otherwise prints the skip marker ctest turns into "Skipped" (never a pass).
dir=$1
shift
if [ ! -f "$dir/node_modules/.quiver-lock" ]; then
  echo "QUIVER_WEB_SKIP: $dir/node_modules is missing (web.npm_ci could not reach the npm registry)"
  exit 0
fi
exec "$@"
