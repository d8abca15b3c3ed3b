#!/usr/bin/env bash
# A stand-in for quiverc that fails in the way $QUIVER_FAULT names, for the tests that check
# quiverc_robustness notices each kind of failure.
case "${QUIVER_FAULT:-}" in
  segv) kill -SEGV $$ ;;
  hang) sleep 600 ;;
  silent) exit 1 ;;
  status3) echo "quiverc: error: something"; exit 3 ;;
  *) echo "faulty_compiler.sh: set QUIVER_FAULT to segv, hang, silent or status3" >&2; exit 2 ;;
esac
