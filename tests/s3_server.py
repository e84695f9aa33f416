#!/usr/bin/env python3
"""A local S3-compatible server for the object-store tests: moto's S3 (PyPI `moto[server]`), on a
free loopback port, serving one request at a time so that its conditional puts (If-None-Match: *)
are atomic, as S3's are. Creates the buckets named on the command line, then prints
`READY <port>` and serves until killed or until its standard input closes (so it never outlives
the test that started it).

    python tests/s3_server.py BUCKET [BUCKET ...]
"""
import logging
import sys
import threading
import urllib.request

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server


def main():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for bucket in sys.argv[1:]:
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}/{bucket}", method="PUT")
        urllib.request.urlopen(request).read()
    print(f"READY {server.port}", flush=True)
    sys.stdin.read()  # returns when the parent closes our input or dies
    server.shutdown()


if __name__ == "__main__":
    main()
