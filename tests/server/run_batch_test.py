#!/usr/bin/env python3
"""pagoda run-batch: a run killed midway (SIGKILL) and resumed answers every custom_id exactly
once, with the same greedy outputs as an uninterrupted run; bad lines get error lines (or the
server's 400 response) and never stop the run. Usage: run_batch_test.py PAGODA_BIN MODEL."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

BIN, MODEL = sys.argv[1], sys.argv[2]
N = 24


def requests():
    lines = []
    for i in range(N):
        if i % 2 == 0:
            body = {"prompt": f"Story number {i}: once upon a time", "max_tokens": 20,
                    "temperature": 0}
            url = "/v1/completions"
        else:
            body = {"messages": [{"role": "user", "content": f"Tell me fact {i}."}],
                    "max_tokens": 20, "temperature": 0}
            url = "/v1/chat/completions"
        lines.append(json.dumps({"custom_id": f"req-{i}", "method": "POST", "url": url,
                                 "body": body}))
    # Bad lines: each answered, none stops the run.
    lines.insert(3, "{not json")
    lines.insert(7, json.dumps({"custom_id": "bad-url", "method": "POST", "url": "/v1/nope",
                                "body": {}}))
    lines.insert(9, json.dumps({"custom_id": "bad-field", "method": "POST",
                                "url": "/v1/completions",
                                "body": {"prompt": "a", "temperature": "hot"}}))
    lines.insert(11, json.dumps({"method": "POST", "url": "/v1/completions", "body": {}}))
    lines.insert(13, json.dumps({"custom_id": "req-0", "method": "POST",
                                 "url": "/v1/completions", "body": {"prompt": "dup"}}))
    return lines


def run(inp, out, extra=()):
    return subprocess.Popen([BIN, "run-batch", "-i", inp, "-o", out, "-m", MODEL, "-t", "2",
                             *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def outputs(lines):
    """custom_id -> the generated text (or the status/error code)."""
    got = {}
    for r in lines:
        cid = r["custom_id"]
        if r["response"] is None:
            got.setdefault(cid, []).append(("error", r["error"]["code"]))
        elif r["response"]["status_code"] != 200:
            got.setdefault(cid, []).append(("status", r["response"]["status_code"]))
        else:
            c = r["response"]["body"]["choices"][0]
            text = c["text"] if "text" in c else c["message"]["content"]
            got.setdefault(cid, []).append(("ok", text))
    return got


def main():
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "in.jsonl")
        with open(inp, "w") as f:
            f.write("\n".join(requests()) + "\n")
        full = os.path.join(d, "full.jsonl")
        p = run(inp, full)
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()
        ref = outputs(read(full))
        def ok(entries):
            return [e for e in entries if e[0] == "ok"]

        for i in range(N):
            assert len(ok(ref[f"req-{i}"])) == 1, ref[f"req-{i}"]
        assert ref["bad-url"] == [("error", "invalid_url")], ref["bad-url"]
        assert ref["bad-field"] == [("status", 400)], ref["bad-field"]
        assert ("error", "duplicate_custom_id") in ref["req-0"], ref["req-0"]
        assert len(ref[None]) == 2  # the line that is not JSON and the one without custom_id
        assert "lines/s" in err.decode(), err.decode()  # the progress line

        # Killed midway, then resumed.
        part = os.path.join(d, "part.jsonl")
        p = run(inp, part, ["--max-concurrency", "1"])
        deadline = time.time() + 300
        while time.time() < deadline:
            if os.path.exists(part) and len(read(part)) >= 10:
                break
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        before = read(part)
        assert 10 <= len(before) < N + 5, f"{len(before)} lines before the kill"
        # A torn last line (as a kill during a write leaves) is cut off on resume.
        with open(part, "a") as f:
            f.write('{"id": "torn", "custom_id": "req-')
        p = run(inp, part)
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()
        got = outputs(read(part))
        for i in range(N):
            cid = f"req-{i}"
            assert ok(got[cid]) == ok(ref[cid]), (cid, got[cid], ref[cid])
        assert got["bad-url"] == [("error", "invalid_url")]
        assert got["bad-field"] == [("status", 400)]
        # Every line is whole JSON (read() parsed them all) and no id was answered twice.
        ids = [r["custom_id"] for r in read(part) if r["custom_id"] is not None]
        # req-0: its answer, and the duplicate line's error if it was reached before the kill
        # (on resume req-0 is done, so that line is skipped).
        dup = ids.count("req-0") - 1
        assert dup in (0, 1), ids
        assert len(set(ids)) == len(ids) - dup, ids
        print(f"ok: {len(before)} lines before the kill, {len(ids)} ids after resuming")


main()
