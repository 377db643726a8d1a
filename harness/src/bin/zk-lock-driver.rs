//! `zk-lock-driver`: zk-lock's recipes (and the harness's recipes broken on
//! purpose) served through the driver protocol of `harness/DRIVERS.md`.
//!
//! It hosts the very code `--implementation zk-lock` runs in process, so a
//! run through it shows what the protocol loses: nothing, if the verdicts
//! are the same (`harness matrix scenarios/ --implementations zk-lock,zk-lock-driver`).
//!
//! It serves successive runs (`reuse` in its `init` reply): `reset` closes
//! every client and starts a new host whose events carry the new `run`.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use harness::implementation::inprocess::{self, Host};
use harness::implementation::protocol::{Event, Line, Op, OpError, Reply, Request, PROTOCOL};
use harness::implementation::{Acquired, Mode};
use harness::scenario::Role;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// Each client's outstanding requests (id and task), so that a crash can
/// abandon them.
type Outstanding = Arc<Mutex<HashMap<String, Vec<(u64, AbortHandle)>>>>;

fn out(tx: &mpsc::UnboundedSender<String>, line: &Line) {
    let mut text = serde_json::to_string(line).expect("lines serialize");
    text.push('\n');
    let _ = tx.send(text);
}

/// An event of a client opened in run `run`, which it carries.
fn out_event(tx: &mpsc::UnboundedSender<String>, e: Event, run: u64) {
    let mut v = serde_json::to_value(Line::Event(e)).expect("lines serialize");
    if let Some(o) = v.as_object_mut() {
        o.insert("run".into(), run.into());
    }
    let mut text = v.to_string();
    text.push('\n');
    let _ = tx.send(text);
}

/// A host for run `run`: its clients' events carry the run.
fn host_for(tx: &mpsc::UnboundedSender<String>, run: u64) -> Arc<Host> {
    let events = tx.clone();
    Arc::new(Host::new(Arc::new(move |e: Event| {
        out_event(&events, e, run)
    })))
}

async fn serve(host: &Host, op: Op) -> Result<Reply, OpError> {
    let ok = |mut r: Reply, f: &dyn Fn(&mut Reply)| {
        f(&mut r);
        r
    };
    Ok(match op {
        Op::Init { protocol } => {
            if protocol != PROTOCOL {
                return Err(OpError::definite(
                    "Protocol",
                    format!("speaks protocol {PROTOCOL}, not {protocol}"),
                ));
            }
            let (kinds, recipes) = inprocess::offers();
            ok(Reply::ok(0), &|r| {
                r.implementation = Some(inprocess::implementation());
                r.kinds = Some(kinds.clone());
                r.recipes = Some(recipes.clone());
                r.reuse = Some(true);
            })
        }
        Op::Open {
            client,
            connect,
            session_timeout_ms,
            lock,
        } => {
            let s = host
                .open(
                    &client,
                    &connect,
                    Duration::from_millis(session_timeout_ms),
                    &lock,
                )
                .await?;
            ok(Reply::ok(0), &|r| r.session = Some(s))
        }
        Op::Acquire {
            client,
            role,
            mode,
            timeout_ms,
        } => {
            let role = Role::from_name(&role)
                .ok_or_else(|| OpError::definite("BadRole", format!("no role {role:?}")))?;
            let mode = match (mode.as_str(), timeout_ms) {
                ("block", _) => Mode::Block,
                ("try", _) => Mode::Try,
                ("timeout", Some(ms)) => Mode::Timeout(Duration::from_millis(ms)),
                (m, _) => {
                    return Err(OpError::definite(
                        "BadMode",
                        format!("no mode {m:?} (timeout needs timeout_ms)"),
                    ))
                }
            };
            let a = host.acquire(&client, role, mode).await?;
            ok(Reply::ok(0), &|r| match &a {
                Acquired::Held { node, session } => {
                    r.acquired = Some(true);
                    r.node = node.clone();
                    r.session = *session;
                }
                Acquired::NotAcquired => r.acquired = Some(false),
            })
        }
        Op::Release { client } => {
            host.release(&client).await?;
            Reply::ok(0)
        }
        Op::Touch { client, path, data } => {
            host.touch(&client, &path, &data).await?;
            Reply::ok(0)
        }
        Op::Close { client } => {
            host.close(&client).await?;
            Reply::ok(0)
        }
        Op::Crash { client } => {
            host.crash(&client);
            Reply::ok(0)
        }
        // Handled by the loop, which replaces the host.
        Op::Reset { .. } => Reply::ok(0),
        Op::Shutdown => {
            host.shutdown().await;
            Reply::ok(0)
        }
    })
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zk-lock-driver: tokio runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    runtime.block_on(run());
    std::process::ExitCode::SUCCESS
}

async fn run() {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = rx.recv().await {
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    let mut host = host_for(&tx, 0);
    // Outstanding requests per client, so that a crash can abandon them.
    let outstanding: Outstanding = Arc::default();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let req: Request = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("not a request ({e}): {line}");
                if let Some(id) = serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64))
                {
                    out(
                        &tx,
                        &Line::Reply(Reply::err(
                            id,
                            OpError::definite("BadRequest", e.to_string()),
                        )),
                    );
                }
                continue;
            }
        };
        let id = req.id;
        let client = req.op.client().map(str::to_string);
        if let (Op::Crash { .. }, Some(c)) = (&req.op, &client) {
            let abandoned = outstanding.lock().remove(c).unwrap_or_default();
            for (_, h) in abandoned {
                h.abort();
            }
        }
        let shutdown = req.op == Op::Shutdown;
        if shutdown || matches!(req.op, Op::Reset { .. }) {
            // Whatever still waits (a blocked acquire) holds its client open.
            let all: Vec<_> = std::mem::take(&mut *outstanding.lock())
                .into_values()
                .flatten()
                .collect();
            for (_, h) in all {
                h.abort();
            }
        }
        if let Op::Reset { run } = req.op {
            // Every client of the run closes before the reply; a new host
            // serves the next run, and whatever the old one's clients still
            // say carries the old run.
            host.shutdown().await;
            host = host_for(&tx, run);
            out(&tx, &Line::Reply(Reply::ok(id)));
            continue;
        }
        let (host2, tx2, out2, c2) = (
            host.clone(),
            tx.clone(),
            outstanding.clone(),
            client.clone(),
        );
        let task = tokio::spawn(async move {
            let reply = match serve(&host2, req.op).await {
                Ok(mut r) => {
                    r.id = id;
                    r
                }
                Err(e) => Reply::err(id, e),
            };
            out(&tx2, &Line::Reply(reply));
            if let Some(c) = c2 {
                if let Some(v) = out2.lock().get_mut(&c) {
                    v.retain(|(i, _)| *i != id);
                }
            }
        });
        if shutdown {
            let _ = task.await;
            break;
        }
        if let Some(c) = client {
            outstanding
                .lock()
                .entry(c)
                .or_default()
                .push((id, task.abort_handle()));
        }
    }
    host.shutdown().await;
    drop(tx);
    drop(host);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
}
