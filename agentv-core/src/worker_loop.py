

# The persistent protocol every warm python worker speaks (`judge_pool.rs`): announce it, then
# answer each request line ({id, payload}) with {id, result}, where `run(payload)` gives the
# result and an exception it raises becomes {threw}. Requests run on a few threads and are
# answered as they finish, in any order (a multiplexed pool sends many at once); what the
# scripts print goes to stderr, so it never breaks the protocol. Appended to each worker's own
# code.
def main():
    import threading
    from concurrent.futures import ThreadPoolExecutor

    out = sys.stdout
    sys.stdout = sys.stderr
    lock = threading.Lock()

    def send(answer):
        text = json.dumps(answer) + "\n"
        with lock:
            out.write(text)
            out.flush()

    def answer(request):
        try:
            result = run(request["payload"])
        except BaseException as e:  # the script's own errors are its answer
            result = {"threw": "%s: %s" % (type(e).__name__, e)}
        send({"id": request["id"], "result": result})

    send({"ready": True, "protocol": 1})
    with ThreadPoolExecutor(max_workers=32) as threads:
        for line in sys.stdin:
            try:
                request = json.loads(line)
            except ValueError:
                continue
            threads.submit(answer, request)


main()
