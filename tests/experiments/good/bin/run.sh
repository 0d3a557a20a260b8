#!/bin/sh
# a workload of the example experiments
echo "run.sh $*"
