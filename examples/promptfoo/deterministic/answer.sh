#!/bin/sh
# A stand-in model: the prompt is the first argument, the answer goes to standard output.
case "$1" in
  *France* | *FRANCE*) echo "The capital of France is Paris." ;;
  *Japan* | *JAPAN*) echo "Tokyo" ;;
  *Germany* | *GERMANY*) echo "The capital of Germany is Berlin." ;;
  *Italy* | *ITALY*) echo "Rome is the capital of Italy." ;;
  *Spain* | *SPAIN*) echo "The capital of Spain is Madrid." ;;
  *) echo "I am not sure." ;;
esac
