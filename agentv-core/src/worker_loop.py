

# The persistent protocol every warm python worker speaks (`judge_pool.rs`): announce it, then
# answer one request per line ({id, payload}) with {id, result}, where `run(payload)` gives the
# result and an exception it raises becomes {threw}. Appended to each worker's own code.
def main():
    # The protocol owns stdout; what the scripts print goes to stderr, as promptfoo reads their
    # results apart from what they print.
    channel = sys.stdout
    sys.stdout = sys.stderr
    channel.write(json.dumps({"ready": True, "protocol": 1}) + "\n")
    channel.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        try:
            result = run(request["payload"])
        except BaseException as e:  # the script's own errors are its answer
            result = {"threw": "%s: %s" % (type(e).__name__, e)}
        channel.write(json.dumps({"id": request["id"], "result": result}) + "\n")
        channel.flush()


main()
