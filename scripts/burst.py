#!/usr/bin/env python3
"""A flash-sale burst for `make demo`, with nothing but the standard library.

For each strategy: reset product 1, switch to the strategy, release N buyers
at once (threads; a `busy` answer is retried like a real client would), then
read /admin/audit and print one row. The full load generator is
`seckill-loadgen`; this is the five-second version for a first look.
"""
import argparse
import json
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def call(url, method="GET", body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def burst(base, users, first_user, start):
    def one(user):
        start.wait()
        deadline = time.monotonic() + 20
        while True:
            status, body = call(f"{base}/api/v1/products/1/grab", "POST", {"user_id": user, "quantity": 1})
            if status == 429 and time.monotonic() < deadline:
                time.sleep(0.005)
                continue
            return status if status == 201 else (body or {}).get("error", status)

    with ThreadPoolExecutor(max_workers=min(users, 128)) as pool:
        futures = [pool.submit(one, first_user + i) for i in range(users)]
        time.sleep(0.2)
        t0 = time.monotonic()
        start.set()
        results = [f.result() for f in futures]
        elapsed = time.monotonic() - t0
    return results, elapsed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--strategies", required=True)
    p.add_argument("--stock", type=int, default=50)
    p.add_argument("--users", type=int, default=200)
    p.add_argument("--work-delay-ms", type=int, default=5)
    a = p.parse_args()

    call(f"{a.url}/admin/faults", "PUT", {"work_delay_ms": a.work_delay_ms, "unlock_before_commit": False}, a.token)
    header = f"{'strategy':<18} {'ordered':>7} {'sold_out':>8} {'busy':>5} {'stock':>5} {'oversold':>8} {'lost_upd':>8} {'dup':>4} {'grabs/s':>8}  verdict"
    print(header)
    print("-" * len(header))
    first_user = 1
    for s in a.strategies.split(","):
        status, body = call(f"{a.url}/admin/strategy", "PUT", {"strategy": s}, a.token)
        if status != 200:
            print(f"{s:<18} cannot switch: {body}")
            continue
        call(f"{a.url}/admin/products/1/reset", "POST", {"stock": a.stock}, a.token)
        results, elapsed = burst(a.url, a.users, first_user, threading.Event())
        first_user += a.users
        _, audit = call(f"{a.url}/admin/audit", token=a.token)
        row = next(r for r in audit["products"] if r["product_id"] == 1)
        bad = row["oversold"] + abs(row["lost_updates"]) + row["duplicates"]
        verdict = "VIOLATION" if bad else "exact"
        print(f"{s:<18} {results.count(201):>7} {results.count('sold_out'):>8} {results.count('busy'):>5} "
              f"{row['stock']:>5} {row['oversold']:>8} {row['lost_updates']:>8} {row['duplicates']:>4} "
              f"{a.users / elapsed:>8.0f}  {verdict}")


if __name__ == "__main__":
    main()
