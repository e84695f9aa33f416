#!/usr/bin/env python3
"""A local S3-compatible server for the object-store tests: moto's S3 (PyPI `moto[server]`), on a
free loopback port, serving one request at a time so that its conditional puts (If-None-Match: *)
are atomic, as S3's are. Creates the buckets named on the command line, then prints
`READY <port>` and serves until killed or until its standard input closes (so it never outlives
the test that started it).

With `--faults SEED` it fails like an S3 front end under trouble, for the puts of table metadata
versions (`*.metadata.json`): some are stored and then answered with a 500 (the answer lost after
the write, as a timeout leaves it), some stored and then the connection dropped without an answer,
some dropped before anything is stored, some refused with a 503 before anything is stored.
`GET /_faults` answers how many of each it injected.

With `--faults unknown` every put of a metadata version after the first of a table is stored and
answered with a 500, and the next read of it is refused (403): the writer cannot tell whether its
commit took effect. Later reads succeed.

    python tests/s3_server.py [--faults SEED | --faults unknown] BUCKET [BUCKET ...]
"""
import json
import logging
import random
import socket
import sys
import threading
import urllib.request

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server


def store(app, environ):
    """Has moto store the request's object, discarding its answer."""
    body = app(environ, lambda status, headers, exc_info=None: (lambda data: None))
    try:
        for _ in body:
            pass
    finally:
        getattr(body, "close", lambda: None)()


class UnknownOutcomes:
    """WSGI middleware making every commit after a table's first one's outcome unknown to its writer."""

    def __init__(self, app):
        self.app = app
        self.unreadable = set()
        self.injected = {"stored_then_500": 0, "read_back_refused": 0}

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/_faults":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(self.injected).encode()]
        method = environ["REQUEST_METHOD"]
        if method == "PUT" and path.endswith(".metadata.json") and not path.endswith("/v1.metadata.json") \
                and path not in self.unreadable:
            store(self.app, environ)
            self.unreadable.add(path)
            self.injected["stored_then_500"] += 1
            start_response("500 Internal Server Error", [("Content-Type", "application/xml")])
            return [b"<Error><Code>InternalError</Code><Message>injected after storing</Message></Error>"]
        if method in ("GET", "HEAD") and path in self.unreadable:
            self.unreadable.discard(path)
            self.injected["read_back_refused"] += 1
            start_response("403 Forbidden", [("Content-Type", "application/xml")])
            return [b"<Error><Code>AccessDenied</Code><Message>injected on reading back</Message></Error>"]
        return self.app(environ, start_response)


class Faults:
    """WSGI middleware injecting the failures described above, from a fixed seed."""

    def __init__(self, app, seed):
        self.app = app
        self.random = random.Random(seed)
        self.injected = {"stored_then_500": 0, "refused_503": 0, "stored_then_dropped": 0, "dropped": 0}

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/_faults":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(self.injected).encode()]
        if environ["REQUEST_METHOD"] == "PUT" and path.endswith(".metadata.json"):
            roll = self.random.random()
            if roll < 0.3:
                # Store it, then lose the answer.
                store(self.app, environ)
                self.injected["stored_then_500"] += 1
                start_response("500 Internal Server Error", [("Content-Type", "application/xml")])
                return [b"<Error><Code>InternalError</Code><Message>injected after storing</Message></Error>"]
            if roll < 0.4:
                # Store it, then drop the connection: no answer at all.
                store(self.app, environ)
                answer = self.drop(environ, start_response)
                self.injected["stored_then_dropped"] += 1
                return answer
            if roll < 0.45:
                answer = self.drop(environ, start_response)
                self.injected["dropped"] += 1
                return answer
            if roll < 0.55:
                self.injected["refused_503"] += 1
                start_response("503 Slow Down", [("Content-Type", "application/xml")])
                return [b"<Error><Code>SlowDown</Code><Message>injected before storing</Message></Error>"]
        return self.app(environ, start_response)

    @staticmethod
    def drop(environ, start_response):
        """Closes the client's connection before any byte of an answer."""
        connection = environ["werkzeug.socket"]
        connection.shutdown(socket.SHUT_RDWR)
        connection.close()
        start_response("500 Internal Server Error", [])
        return [b""]


def main():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    args = sys.argv[1:]
    faults = None
    if args[:1] == ["--faults"]:
        faults, args = args[1], args[2:]
    app = DomainDispatcherApplication(create_backend_app)
    if faults == "unknown":
        app = UnknownOutcomes(app)
    elif faults is not None:
        app = Faults(app, int(faults))
    server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for bucket in args:
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}/{bucket}", method="PUT")
        urllib.request.urlopen(request).read()
    print(f"READY {server.port}", flush=True)
    sys.stdin.read()  # returns when the parent closes our input or dies
    server.shutdown()


if __name__ == "__main__":
    main()
