"""A WSGI application for the worker's budget test: `/stuck` never answers in time, any other
path answers the worker's pid."""

import os
import time


def application(environ, start_response):
    if environ["PATH_INFO"] == "/stuck":
        time.sleep(600)  # far past any budget the test gives; its daemon thread ends with its worker
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
