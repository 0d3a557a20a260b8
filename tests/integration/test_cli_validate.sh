#!/usr/bin/env bash
# carma validate on the experiment corpus (tests/experiments): every good file is accepted with
# "FILE: ok (N workloads)" and exit status 0; every bad/NAME.json is rejected with exit status 1
# and exactly the lines of bad/NAME.expected on stderr; --json prints the resolved document (a
# valid experiment itself, paths absolute); a file that cannot be read is exit status 1 and a
# bad command line exit status 2.
. "${CARMA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib_cli.sh"

EXP="$CARMA_SRC/tests/experiments"
need_file "$EXP/good/full.json" "$EXP/bad"
here=$PWD

# --- the good files, named relative to the corpus
cd "$EXP" || fail "cd $EXP"
for f in good/full.json:3 good/minimal.json:1 good/intensity_file.json:2 \
    good/carma-readme/sample_experiment.json:1; do
    file=${f%:*} n=${f##*:}
    name=$(basename "$file" .json)
    rc=$(run_logged "$here/good-$name" "$CARMA" validate "$file")
    check_rc "$here/good-$name" 0 "$rc"
    words=workloads
    [ "$n" = 1 ] && words=workload
    check_eq "$(head -n 1 "$here/good-$name.out")" "$file: ok ($n $words)" "validate $file"
    check_eq "$(sed -n 2p "$here/good-$name.out")" "commands it runs:" "validate $file: its commands"
    check_eq "$(($(wc -l <"$here/good-$name.out") - 2))" "$n" "validate $file: a command a workload"
    check_eq "$(cat "$here/good-$name.err")" "" "validate $file: stderr"
done

# --- every bad file: exit status 1, exactly the expected lines on stderr, nothing on stdout
cd "$EXP/bad" || fail "cd $EXP/bad"
count=0
for f in *.json; do
    name=${f%.json}
    [ -f "$name.expected" ] || {
        check_fail "bad/$f has no bad/$name.expected"
        continue
    }
    rc=$(run_logged "$here/bad-$name" "$CARMA" validate "$f")
    check_rc "$here/bad-$name" 1 "$rc"
    check_clean_stderr "$here/bad-$name"
    if ! cmp -s "$here/bad-$name.err" "$name.expected"; then
        check_fail "bad/$f: stderr differs from bad/$name.expected"
        diff "$name.expected" "$here/bad-$name.err" >&2
    fi
    [ -s "$here/bad-$name.out" ] && check_fail "bad/$f: output on stdout"
    count=$((count + 1))
done
[ "$count" -ge 22 ] || check_fail "only $count bad experiments in the corpus"
cd "$here" || fail "cd $here"

# --- relative paths resolve against the file's directory, not the working directory
rc=$(run_logged abs "$CARMA" validate "$EXP/good/full.json")
check_rc abs 0 "$rc"
check_eq "$(head -n 1 abs.out)" "$EXP/good/full.json: ok (3 workloads)" "validate by absolute path"
check_eq "$(sed -n 3p abs.out)" "  train: python3 $(cd "$EXP/good" && pwd -P)/scripts/train.py --epochs 3 (in $(cd "$EXP/good" && pwd -P)/scripts)" \
    "validate: a python workload's command, in its directory"

# --- every command the file makes carma run execute is listed, quoted as a shell reads it:
# the workloads' (a profiled one under nsys), a cmd: meter's
mkdir -p cmds
cat >cmds/exp.json <<'EOF2'
{"experiment_name": "cmds",
 "workloads": [{"name": "w", "script": "sh", "args": ["-c", "echo it's here; sleep 1"],
                "profile": "nsys"}],
 "monitoring": {"meter": "cmd:ipmitool dcmi power reading"}}
EOF2
rc=$(run_logged cmds "$CARMA" validate cmds/exp.json)
check_rc cmds 0 "$rc"
check_eq "$(sed -n 3p cmds.out)" "  w: nsys profile --output=RUN_DIR/logs/w --export=sqlite --force-overwrite=true --trace=cuda sh -c 'echo it'\\''s here; sleep 1' (in $(cd cmds && pwd -P))" \
    "validate: a profiled workload's command under nsys, quoted"
check_eq "$(sed -n 4p cmds.out)" "  monitoring.meter: /bin/sh -c 'ipmitool dcmi power reading' (every second while carma samples)" \
    "validate: the cmd: meter's command"

# --- --json: the resolved document, which validates again (before or after the file name)
rc=$(run_logged json "$CARMA" validate --json "$EXP/good/full.json")
check_rc json 0 "$rc"
check_py "validate --json" '
import os
j = load(sys.argv[1])
good = os.path.realpath(sys.argv[2])
w = j["workloads"]
assert [x["name"] for x in w] == ["train", "serve", "setup"], w
assert w[0]["script"] == good + "/scripts/train.py", w[0]["script"]
assert w[0]["cwd"] == good + "/scripts", w[0]["cwd"]
assert w[0]["env"] == {"OMP_NUM_THREADS": "4", "PYTHONUNBUFFERED": "1", "CUDA_VISIBLE_DEVICES": "0"}, w[0]["env"]
assert w[1]["env"] == {"CUDA_VISIBLE_DEVICES": "2,3"}, w[1]["env"]
assert w[1]["script"] == good + "/bin/run.sh" and w[1]["cwd"] == good, w[1]
assert w[1]["delay_s"] == 2.5 and w[1]["timeout_s"] is None, w[1]
assert w[2]["gpu"] is None and w[2]["args"] == [] and w[2]["type"] == "shell", w[2]
# earlier carma files: type python/shell/exec without launch is the launch mode, kept as the kind
assert [x["launch"] for x in w] == ["python", "exec", "shell"], w
assert [x["type"] for x in w] == ["python", "exec", "shell"], w
assert j["monitoring"] == {"interval": "250ms", "sources": "rapl,model", "baseline_s": 0}, j["monitoring"]
assert j["carbon"]["region"] == "FRA" and j["carbon"]["pue"] == 1.2, j["carbon"]
assert j["attribution"] == {"idle_policy": "proportional"}, j["attribution"]
' json.out "$EXP/good"
cp json.out resolved.json
rc=$(run_logged rejson "$CARMA" validate resolved.json --json)
check_rc rejson 0 "$rc"
cmp -s json.out rejson.out || check_fail "the resolved document does not resolve to itself"

# --- the file shown as given; a problem in a copy whose script is missing
mkdir -p sub
sed 's#"scripts/train.py"#"scripts/nope.py"#' "$EXP/good/full.json" >sub/exp.json
cp -r "$EXP/good/bin" "$EXP/good/scripts" sub/
rc=$(run_logged copy "$CARMA" validate sub/exp.json)
check_rc copy 1 "$rc"
check_eq "$(cat copy.err)" 'sub/exp.json:9:17: workloads[0].script: "scripts/nope.py" does not exist' \
    "missing script in a copy"

# --- files that cannot be read
rc=$(run_logged nofile "$CARMA" validate nope.json)
check_rc nofile 1 "$rc"
check_eq "$(cat nofile.err)" "nope.json: cannot read: No such file or directory" "missing file"
rc=$(run_logged isdir "$CARMA" validate sub)
check_rc isdir 1 "$rc"
check_eq "$(cat isdir.err)" "sub: cannot read: Is a directory" "directory"

# --- the command line
rc=$(run_logged noarg "$CARMA" validate)
check_rc noarg 2 "$rc"
check_grep noarg.err "no experiment file given" "validate without a file"
rc=$(run_logged twoargs "$CARMA" validate a.json b.json)
check_rc twoargs 2 "$rc"
check_grep twoargs.err "give exactly one file" "validate with two files"
rc=$(run_logged badopt "$CARMA" validate --frobnicate "$EXP/good/full.json")
check_rc badopt 2 "$rc"
check_grep badopt.err "unknown option '--frobnicate'" "validate with an unknown option"
rc=$(run_logged help "$CARMA" validate --help)
check_rc help 0 "$rc"
check_grep help.out "usage: carma validate" "validate --help"
rc=$(run_logged list "$CARMA" --help)
check_grep list.out "validate" "carma --help lists validate"

cli_done
