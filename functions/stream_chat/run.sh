#!/bin/sh
# Started by the Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap): the streaming function's
# HTTP server on $PORT; the layer's packages are on /opt/python.
PYTHONPATH="$LAMBDA_TASK_ROOT:/opt/python:$PYTHONPATH" exec python3 "$LAMBDA_TASK_ROOT/app.py"
