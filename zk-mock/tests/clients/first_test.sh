#!/bin/sh
# The README's first test for any other language, exactly as it is there
# (zk-mock/lib/tests/readme.rs checks it). The cross-client job runs it with
# the zk-mock binary and Debian's zkCli.sh on PATH, and expects PASS.
# README begin
zk-mock --port 2181 --admin-port 8080 & trap 'kill $!' EXIT
until curl -sf localhost:8080/sessions >/dev/null; do sleep 0.05; done
zkCli.sh -server 127.0.0.1:2181 create /leader me            # the program under test
curl -s localhost:8080/snapshot | grep -q '"/leader":{"data":"me"' && echo PASS
curl -s -X POST localhost:8080/reset                           # a new server for the next test
# README end
