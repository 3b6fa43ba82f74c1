# Paged decode: the shipped tree and copies of it with dev/patches applied, tested and timed
# side by side in one device call (each patch applies to HEAD alone; trees of patches that
# conflict live apart).
#   PDA_TREES  ';'-separated NAME:PATCH (PATCH: a dev/patches/ file's stem), e.g.
#              "a:pda_one;b:pda_two" (dev/patches/pda_one.patch ...); NAME "." is the shipped tree
#   PDA_STEPS  ';'-separated steps, in order:
#                NAME test K      pytest -k K over tests/gpu/test_gpu_paged_decode_attention.py in NAME
#                NAME time LABEL [ARGS]  dev/time_paged_decode.py in NAME over PDA_CASES (ARGS may
#                                 give --cases of their own) -> $OUT/pda_LABEL.json
#   PDA_CASES  the default --cases (as dev/pda_ab.sh)
# Here, first: `PDA_TREES=... bash dev/pda_variants.sh --prepare` writes each tree's patched
# files under .variants/NAME (ignored; git and patch may be missing on the device); then,
# carrying ".variants", after the kit's build (the trees copy its _C):
#   KIT_STEPS=none KIT_DEV="bash dev/pda_variants.sh" bash tests/gpu/run_on_device.sh kit
set -u
IFS=';' read -ra trees <<<"${PDA_TREES:-}"
if [ "${1:-}" = --prepare ]; then
    grep -qx '/.variants/' .git/info/exclude 2>/dev/null || echo /.variants/ >>.git/info/exclude
    for t in "${trees[@]}"; do
        name=${t%%:*} patch=${t#*:} w=$(mktemp -d)
        git worktree add -q --detach "$w" HEAD && (cd "$w" && git apply "$OLDPWD/dev/patches/$patch.patch") || exit 1
        rm -rf ".variants/$name"; mkdir -p ".variants/$name"
        (cd "$w" && git diff --name-only HEAD | tar -cf - -T -) | tar -xf - -C ".variants/$name"
        git worktree remove --force "$w"
        echo "$name: $(find ".variants/$name" -type f | wc -l) files"
    done
    exit 0
fi
CASES=${PDA_CASES:-8B:1:1024,Qwen:1:1024,8B:1:4096,8B:8:4096,8B:32:4096,8B:1:32768}
root=$PWD
tree() { [ "$1" = . ] && echo "$root" || echo "/tmp/pda_tree_$1"; }
for t in "${trees[@]}"; do
    name=${t%%:*} patch=${t#*:} dir=$(tree "${t%%:*}")
    rm -rf "$dir"; mkdir -p "$dir"
    tar --exclude=./.whl --exclude=./.git --exclude=./.variants --exclude=./.venv --exclude=./build -cf - . | tar -xf - -C "$dir"
    if [ -d ".variants/$name" ]; then
        cp -a ".variants/$name/." "$dir/" && echo "tree $name: $patch's files laid over the shipped tree"
    else
        echo "tree $name: no .variants/$name (carry .variants after --prepare)"; rm -rf "$dir"
    fi
done
IFS=';' read -ra steps <<<"${PDA_STEPS:-. time shipped}"
for s in "${steps[@]}"; do
    read -r name kind rest <<<"$s"
    dir=$(tree "$name")
    echo; echo "=== $name $kind $rest ($(date +%T))"
    [ -d "$dir" ] || { echo "no tree $name"; continue; }
    case $kind in
    test)
        (cd "$dir" && PYTHONPATH="$dir/src:/tmp/tileops-plugin" python3 -m pytest -q -p no:cacheprovider -rfs \
            tests/gpu/test_gpu_paged_decode_attention.py -k "$rest" 2>&1 | tail -15) ;;
    time)
        read -r label args <<<"$rest"
        # shellcheck disable=SC2086  # ARGS are words
        (cd "$dir" && PYTHONPATH="$dir/src" python3 dev/time_paged_decode.py --cases "$CASES" $args \
            --out "$OUT/pda_$label.json" 2>&1 | tail -12) ;;
    *) echo "unknown step kind $kind" ;;
    esac
done
