#!/bin/sh
# Runs simcuda-demo (given as "$@") under simcuda with a private device registry named from this
# shell's pid, removes the registry afterwards, and reports the exit status on the last line.
# The caller sets LD_LIBRARY_PATH, SIMCUDA_DEVICES and SIMCUDA_KERNELS.
name="simcuda-demo-test-$$"
SIMCUDA_REGISTRY="/$name" "$@"
rc=$?
rm -f "/dev/shm/$name"
echo "simcuda-demo exited with status $rc"
exit $rc
