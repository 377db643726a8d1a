//! The HTTP+JSON admin interface: the same controls as [`Control`], for test
//! suites written in other languages. Served by `zk-mock --admin-port PORT`
//! or [`ZkMock::serve_admin`].
//!
//! | method and path | does |
//! |---|---|
//! | `GET /sessions` | live sessions: id (decimal), timeout, ephemerals, watches |
//! | `POST /sessions/{id}/expire` | expire a session (404 if unknown) |
//! | `POST /sessions/{id}/disconnect` | close its connection |
//! | `POST /sessions/{id}/stall`, `/resume` | hold / release its traffic |
//! | `POST /sessions/expire`, `POST /sessions/disconnect` | every session |
//! | `GET /rules`, `POST /rules`, `DELETE /rules/{id}` | fault rules |
//! | `POST /connections/refuse`, `POST /connections/accept` | refuse new connections |
//! | `POST /clock/advance` with `{"ms": N}`, `GET /clock` | the session clock |
//! | `GET /snapshot` | tree, sessions and watches |
//! | `POST /sequence_counter` with `{"path": "/locks", "next": N}` | the next sequence number of a parent's sequential children (404 if it does not exist; [`ZkMock::set_sequence_counter`]) |
//! | `GET /recorder/requests?session=&path=&op=` | recorded requests (`op`: a family such as `create`, every create op code, or one op's name or code) |
//! | `GET /recorder/notifications?session=&path=&event=` | recorded notifications |
//! | `DELETE /recorder` | forget the recording |
//! | `GET /metrics` | counters |
//! | `GET /servers` | each server: index, addr, status, leader, lag, last_zxid, behind, connections |
//! | `POST /servers/{i}/kill`, `/restart`, `/partition`, `/heal` | one server down or back |
//! | `POST /servers/{i}/lag` with `{"ms": N}` or `{"txns": N}` (`{}`: none) | a follower's lag (409 on the leader, which cannot lag) |
//! | `POST /servers/{i}/catch_up` | apply what it holds back |
//! | `POST /election` with `{"ms": N}` (window; default the builder's) | leader loss |
//! | `POST /reset` | back to a new server: sessions expired, tree wiped, rules, stalls, refusal and recording gone ([`ZkMock::reset`]) |
//!
//! Session ids are accepted in decimal (as clients print them) or `0x` hex,
//! in paths and, in a rule's `session`, as a JSON number or string.
//! Errors are 4xx with `{"error": "..."}`.
//!
//! Whoever reaches the admin port can expire sessions, stall the server and
//! read every node, ACL-protected ones too. The binary serves it on loopback
//! unless `--admin-host` says otherwise; [`ZkMock::serve_admin_with_token`]
//! (`--admin-token`, or `ZK_MOCK_ADMIN_TOKEN`) makes every request carry
//! `Authorization: Bearer <token>`, and answers 401 without it.

use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::fault::Rule;
use crate::proto::{EventType, OpCode};
use crate::record::{NotificationRecord, RequestRecord};
use crate::{Control, Error, ZkMock};

type ApiResult = Result<Response, ApiError>;

struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

fn not_found(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::NOT_FOUND, msg.into())
}

fn session_id(text: &str) -> Result<crate::SessionId, ApiError> {
    text.parse()
        .map_err(|e: crate::BadSessionId| bad(e.to_string()))
}

fn ok(v: impl Serialize) -> ApiResult {
    Ok(Json(v).into_response())
}

/// The admin routes over a server's controls.
pub fn router(control: Control) -> Router {
    Router::new()
        .route("/sessions", get(sessions))
        .route("/sessions/expire", post(expire_all))
        .route("/sessions/disconnect", post(disconnect_all))
        .route("/sessions/{id}/{verb}", post(session_verb))
        .route("/rules", get(rules).post(add_rule))
        .route("/rules/{id}", delete(remove_rule))
        .route("/connections/{verb}", post(connections))
        .route("/clock", get(clock))
        .route("/clock/advance", post(advance))
        .route("/snapshot", get(snapshot))
        .route("/sequence_counter", post(sequence_counter))
        .route("/recorder/requests", get(requests))
        .route("/recorder/notifications", get(notifications))
        .route("/recorder", delete(clear))
        .route("/metrics", get(metrics))
        .route("/servers", get(servers))
        .route("/servers/{i}/lag", post(server_lag))
        .route("/servers/{i}/{verb}", post(server_verb))
        .route("/election", post(election))
        .route("/reset", post(reset))
        .fallback(|| async {
            not_found(
                "no such endpoint; the admin API is in docs/binary.md of the zk-mock repository",
            )
        })
        .with_state(control)
}

/// [`router`], with every request required to carry
/// `Authorization: Bearer <token>`; others get a 401 saying what to send.
pub fn router_with_token(control: Control, token: impl Into<String>) -> Router {
    let token: Arc<str> = Arc::from(token.into());
    router(control).layer(axum::middleware::from_fn_with_state(token, require_token))
}

async fn require_token(State(token): State<Arc<str>>, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let why = match given {
        Some(t) if same(t.trim().as_bytes(), token.as_bytes()) => return next.run(req).await,
        Some(_) => "the bearer token is not this admin interface's token (zk-mock --admin-token or ZK_MOCK_ADMIN_TOKEN)",
        None => "this admin interface needs a token: send `Authorization: Bearer <token>` with the token given to zk-mock --admin-token or ZK_MOCK_ADMIN_TOKEN",
    };
    let mut response = ApiError(StatusCode::UNAUTHORIZED, why.into()).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Compares without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl ZkMock {
    /// Serves the admin interface on `addr` (port 0 picks a free one) on the
    /// server's own runtime, for as long as the server runs. Anyone who
    /// reaches `addr` controls the server: keep it on loopback, or use
    /// [`serve_admin_with_token`](Self::serve_admin_with_token).
    ///
    /// # Errors
    /// [`Error::Bind`] if the address cannot be bound.
    pub fn serve_admin(&self, addr: SocketAddr) -> Result<SocketAddr, Error> {
        self.serve_router(addr, router(self.control()))
    }

    /// [`serve_admin`](Self::serve_admin), answering only requests that
    /// carry `Authorization: Bearer <token>` (401 otherwise).
    ///
    /// # Errors
    /// [`Error::Bind`] if the address cannot be bound; [`Error::Config`] for
    /// an empty token.
    pub fn serve_admin_with_token(
        &self,
        addr: SocketAddr,
        token: impl Into<String>,
    ) -> Result<SocketAddr, Error> {
        let token = token.into();
        if token.trim().is_empty() {
            return Err(Error::Config("the admin token is empty".into()));
        }
        self.serve_router(addr, router_with_token(self.control(), token))
    }

    fn serve_router(&self, addr: SocketAddr, app: Router) -> Result<SocketAddr, Error> {
        let bind_err = |source| Error::Bind { addr, source };
        let listener = std::net::TcpListener::bind(addr).map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        let local = listener.local_addr().map_err(bind_err)?;
        self.runtime().spawn(async move {
            match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => {
                    if let Err(e) = axum::serve(l, app).await {
                        tracing::error!(%e, "admin server failed");
                    }
                }
                Err(e) => tracing::error!(%e, "cannot register admin listener"),
            }
        });
        tracing::info!(addr = %local, "zk-mock admin interface listening");
        Ok(local)
    }
}

async fn sessions(State(c): State<Control>) -> ApiResult {
    ok(c.snapshot().sessions.into_values().collect::<Vec<_>>())
}

async fn session_verb(
    State(c): State<Control>,
    Path((id, verb)): Path<(String, String)>,
) -> ApiResult {
    let id = session_id(&id)?;
    let done = match verb.as_str() {
        "expire" => c.expire_session(id),
        "disconnect" => c.disconnect(id),
        "stall" => c.stall(id).map(crate::Stall::forget).is_some(),
        "resume" => c.resume(id),
        other => {
            return Err(not_found(format!(
                "unknown session verb {other:?}: expire, disconnect, stall or resume"
            )))
        }
    };
    if done {
        ok(json!({ "session": id, verb: true }))
    } else if c.session_ids().contains(&id) {
        Err(ApiError(
            StatusCode::CONFLICT,
            format!("session {id} cannot {verb} now (not connected, or not stalled)"),
        ))
    } else {
        Err(not_found(format!("no live session {id}")))
    }
}

async fn expire_all(State(c): State<Control>) -> ApiResult {
    ok(json!({ "expired": c.expire_all() }))
}

async fn disconnect_all(State(c): State<Control>) -> ApiResult {
    ok(json!({ "disconnected": c.disconnect_all() }))
}

#[derive(Serialize)]
struct RuleView {
    id: u64,
    fired: u64,
    #[serde(flatten)]
    rule: Rule,
}

async fn rules(State(c): State<Control>) -> ApiResult {
    ok(c.rules()
        .into_iter()
        .map(|(id, rule, fired)| RuleView { id, fired, rule })
        .collect::<Vec<_>>())
}

async fn add_rule(State(c): State<Control>, body: Result<Json<Rule>, JsonRejection>) -> ApiResult {
    let Json(rule) = body.map_err(|e| bad(format!("bad rule: {}", e.body_text())))?;
    let guard = c
        .try_rule(rule)
        .map_err(|e| bad(format!("bad rule: {e}")))?;
    let id = guard.id();
    guard.forget();
    Ok((StatusCode::CREATED, Json(json!({ "id": id }))).into_response())
}

async fn remove_rule(State(c): State<Control>, Path(id): Path<String>) -> ApiResult {
    let id: u64 = id
        .parse()
        .map_err(|_| bad(format!("rule id {id:?} is not an integer")))?;
    if c.remove_rule(id) {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(not_found(format!("no rule {id}")))
    }
}

async fn connections(State(c): State<Control>, Path(verb): Path<String>) -> ApiResult {
    match verb.as_str() {
        "refuse" => {
            std::mem::forget(c.refuse_connections());
            ok(json!({ "refusing": true }))
        }
        "accept" => {
            c.accept_connections();
            ok(json!({ "refusing": false }))
        }
        other => Err(not_found(format!(
            "unknown verb {other:?}: refuse or accept"
        ))),
    }
}

async fn clock(State(c): State<Control>) -> ApiResult {
    ok(json!({ "clock_ms": c.clock_ms(), "mode": format!("{:?}", c.clock_mode()).to_lowercase() }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    ms: u64,
}

async fn advance(
    State(c): State<Control>,
    body: Result<Json<Advance>, JsonRejection>,
) -> ApiResult {
    let Json(a) = body.map_err(|e| bad(format!("expected {{\"ms\": N}}: {}", e.body_text())))?;
    c.advance(Duration::from_millis(a.ms));
    ok(json!({ "clock_ms": c.clock_ms() }))
}

async fn snapshot(State(c): State<Control>) -> ApiResult {
    ok(c.snapshot())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SequenceCounter {
    path: String,
    next: i32,
}

async fn sequence_counter(
    State(c): State<Control>,
    body: Result<Json<SequenceCounter>, JsonRejection>,
) -> ApiResult {
    let Json(b) = body.map_err(|e| {
        bad(format!(
            "expected {{\"path\": \"/parent\", \"next\": N}} (N a 32-bit signed integer, as \
             ZooKeeper's counter is): {}",
            e.body_text()
        ))
    })?;
    if c.set_sequence_counter(&b.path, b.next) {
        ok(json!({ "path": b.path, "next": b.next }))
    } else {
        Err(not_found(format!("no node {:?}", b.path)))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Filter {
    session: Option<String>,
    path: Option<String>,
    op: Option<String>,
    event: Option<String>,
}

async fn requests(
    State(c): State<Control>,
    q: Result<Query<Filter>, axum::extract::rejection::QueryRejection>,
) -> ApiResult {
    let Query(f) = q.map_err(|e| bad(e.body_text()))?;
    if f.event.is_some() {
        return Err(bad(
            "requests filter by session, path and op; event is for notifications",
        ));
    }
    let session = f.session.as_deref().map(session_id).transpose()?;
    // Names as in a rule (a family's name is every op code of the family),
    // or an op code's number.
    let ops: Option<Vec<i32>> = match &f.op {
        Some(op) => Some(
            crate::fault::op_codes_named(op)
                .or_else(|| op.parse().ok().and_then(OpCode::from_i32).map(|c| vec![c]))
                .ok_or_else(|| bad(format!("unknown op {op:?}")))?
                .into_iter()
                .map(|c| c as i32)
                .collect(),
        ),
        None => None,
    };
    let picked: Vec<RequestRecord> = c.inspect(|log| {
        log.requests()
            .filter(|r| session.is_none_or(|s| r.session == s))
            .filter(|r| {
                f.path
                    .as_deref()
                    .is_none_or(|p| r.path.as_deref() == Some(p))
            })
            .filter(|r| ops.as_ref().is_none_or(|o| o.contains(&r.op_code)))
            .cloned()
            .collect()
    });
    ok(picked)
}

async fn notifications(
    State(c): State<Control>,
    q: Result<Query<Filter>, axum::extract::rejection::QueryRejection>,
) -> ApiResult {
    let Query(f) = q.map_err(|e| bad(e.body_text()))?;
    if f.op.is_some() {
        return Err(bad(
            "notifications filter by session, path and event; op is for requests",
        ));
    }
    let session = f.session.as_deref().map(session_id).transpose()?;
    let event = match f.event.as_deref() {
        None => None,
        Some("NodeCreated" | "created" | "1") => Some(EventType::NodeCreated),
        Some("NodeDeleted" | "deleted" | "2") => Some(EventType::NodeDeleted),
        Some("NodeDataChanged" | "data_changed" | "changed" | "3") => {
            Some(EventType::NodeDataChanged)
        }
        Some("NodeChildrenChanged" | "children_changed" | "4") => {
            Some(EventType::NodeChildrenChanged)
        }
        Some(other) => return Err(bad(format!("unknown event {other:?}: NodeCreated, NodeDeleted, NodeDataChanged or NodeChildrenChanged"))),
    };
    let picked: Vec<NotificationRecord> = c.inspect(|log| {
        log.notifications()
            .filter(|n| session.is_none_or(|s| n.session == s))
            .filter(|n| f.path.as_deref().is_none_or(|p| n.path == p))
            .filter(|n| event.is_none_or(|e| n.event_type == e as i32))
            .cloned()
            .collect()
    });
    ok(picked)
}

async fn clear(State(c): State<Control>) -> ApiResult {
    c.clear_recording();
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn metrics(State(c): State<Control>) -> ApiResult {
    ok(c.metrics())
}

async fn servers(State(c): State<Control>) -> ApiResult {
    ok(c.servers())
}

fn server_index(c: &Control, text: &str) -> Result<usize, ApiError> {
    let n = c.addrs().len();
    match text.parse::<usize>() {
        Ok(i) if i < n => Ok(i),
        _ => Err(not_found(format!(
            "no server {text:?}: the ensemble's servers are 0..{n}"
        ))),
    }
}

async fn server_verb(
    State(c): State<Control>,
    Path((i, verb)): Path<(String, String)>,
) -> ApiResult {
    let i = server_index(&c, &i)?;
    let server = c.server(i);
    let done = match verb.as_str() {
        "kill" => server.kill(),
        "restart" => server.restart().map_err(|e| {
            ApiError(
                StatusCode::CONFLICT,
                format!("server {i} cannot restart: {e}"),
            )
        })?,
        "partition" => server.partition(),
        "heal" => server.heal(),
        "catch_up" => {
            server.catch_up();
            true
        }
        other => {
            return Err(not_found(format!(
                "unknown server verb {other:?}: kill, restart, partition, heal, lag or catch_up"
            )))
        }
    };
    if done {
        ok(server.info())
    } else {
        Err(ApiError(
            StatusCode::CONFLICT,
            format!(
                "server {i} cannot {verb}: it is {}",
                server.info().status.name()
            ),
        ))
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LagBody {
    ms: Option<u64>,
    txns: Option<usize>,
}

async fn server_lag(
    State(c): State<Control>,
    Path(i): Path<String>,
    body: Result<Json<LagBody>, JsonRejection>,
) -> ApiResult {
    let i = server_index(&c, &i)?;
    let Json(b) = body.map_err(|e| {
        bad(format!(
            "expected {{\"ms\": N}} or {{\"txns\": N}}: {}",
            e.body_text()
        ))
    })?;
    let lag = match (b.ms, b.txns) {
        (Some(_), Some(_)) => return Err(bad("a lag is ms or txns, not both")),
        (Some(ms), None) => crate::Lag::Time(Duration::from_millis(ms)),
        (None, Some(n)) => crate::Lag::Txns(n),
        (None, None) => crate::Lag::None,
    };
    let server = c.server(i);
    server
        .set_lag(lag)
        .map_err(|e| ApiError(StatusCode::CONFLICT, e.to_string()))?;
    ok(server.info())
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ElectionBody {
    ms: Option<u64>,
}

async fn reset(State(c): State<Control>) -> ApiResult {
    c.reset();
    ok(json!({ "reset": true }))
}

async fn election(State(c): State<Control>, body: Option<Json<ElectionBody>>) -> ApiResult {
    let window = body
        .and_then(|Json(b)| b.ms)
        .map(Duration::from_millis)
        .unwrap_or_else(|| c.election_window());
    c.leader_election(window);
    ok(json!({ "electing": true, "window_ms": window.as_millis() as u64 }))
}
