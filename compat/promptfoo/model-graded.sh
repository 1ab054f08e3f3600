#!/bin/sh
# promptfoo's model-graded assertions, run by promptfoo 0.121.20 and by agentv against the same
# deterministic fake model (model-graded/fake_grader.py on 127.0.0.1): prints how far they
# agree, per row and per assertion type. Test-only, like agreement.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
python3 "$here/model-graded/fake_grader.py" --port 0 --port-file "$dir/port" &
fake=$!
trap 'kill $fake 2>/dev/null; rm -rf "$dir"' EXIT
i=0; while [ ! -s "$dir/port" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
[ -s "$dir/port" ] || { echo "the fake grading model did not start" >&2; exit 1; }
export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$dir/port")/v1" OPENAI_API_KEY=sk-fake-model-graded
"$here/agreement.sh" "$here/model-graded/promptfooconfig.yaml" "$here/model-graded/compare/promptfooconfig.yaml"
