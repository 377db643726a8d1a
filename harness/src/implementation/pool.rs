//! Driver processes kept for successive runs: start-up (a JVM, a Python
//! interpreter importing its library) can cost more CPU than a short run.
//!
//! A run takes a process from the pool (an idle one, else a new one) and, at
//! its end, gives it back: a driver whose `init` said `reuse` and that never
//! failed is sent `reset` and kept for the next run; any other is shut down,
//! as without a pool. The pool also starts processes ahead of the runs that
//! will need them, in the background, so that start-up overlaps with runs.
//!
//! The processes and the tasks that read them live on the pool's own runtime
//! (one thread), so that they outlive the runtime of the run that started them.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::driver::{Host, Lender, Process};
use super::inprocess::EventSink;
use super::Implementation;
use crate::error::RunError;

/// Driver processes of one command.
#[derive(Default)]
struct Slot {
    /// Started (and reset, if they served a run), waiting for a run.
    idle: Vec<Arc<Process>>,
    /// Being started in the background.
    starting: usize,
    /// Serving a run, and coming back after it (their `init` said `reuse`).
    busy_reusable: usize,
}

/// What a pool has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Driver processes started.
    pub started: u64,
    /// Runs served by a process that had served another run before.
    pub reused: u64,
    /// Processes shut down after a run (not reusable, failed, no answer to
    /// `reset`, or more than the pool keeps).
    pub retired: u64,
}

/// Driver processes for successive runs (`RunOptions::pool`).
pub struct HostPool {
    /// Idle processes kept per command, and processes started ahead.
    size: usize,
    slots: Mutex<HashMap<Vec<String>, Slot>>,
    /// Wakes runs waiting for a process being started in the background.
    arrived: tokio::sync::Notify,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: tokio::runtime::Handle,
    started: AtomicU64,
    reused: AtomicU64,
    retired: AtomicU64,
}

impl std::fmt::Debug for HostPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostPool")
            .field("size", &self.size)
            .field("stats", &self.stats())
            .finish()
    }
}

impl HostPool {
    /// A pool that keeps up to `size` idle processes of each driver command
    /// (give it the number of runs played at once). Its processes run on a
    /// runtime thread of its own.
    pub fn new(size: usize) -> std::io::Result<Arc<HostPool>> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("harness-driver-pool")
            .enable_all()
            .build()?;
        Ok(Arc::new(HostPool {
            size: size.max(1),
            slots: Mutex::default(),
            arrived: tokio::sync::Notify::new(),
            handle: runtime.handle().clone(),
            runtime: Mutex::new(Some(runtime)),
            started: AtomicU64::new(0),
            reused: AtomicU64::new(0),
            retired: AtomicU64::new(0),
        }))
    }

    /// What it has done so far.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            started: self.started.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
            retired: self.retired.load(Ordering::Relaxed),
        }
    }

    /// Starts processes of `implementation` in the background until the pool
    /// has `size` of them idle, starting, or serving runs they will come back
    /// from. Nothing for zk-lock in process.
    pub fn prestart(self: &Arc<Self>, implementation: &Implementation) {
        let Implementation::Driver { name, command } = implementation else {
            return;
        };
        let missing = {
            let mut slots = self.slots.lock();
            let slot = slots.entry(command.clone()).or_default();
            let have = slot.idle.len() + slot.starting + slot.busy_reusable;
            let missing = self.size.saturating_sub(have);
            slot.starting += missing;
            missing
        };
        for _ in 0..missing {
            // Weak: a pool dropped meanwhile kills what was started for it.
            let (pool, name, command) = (Arc::downgrade(self), name.clone(), command.clone());
            self.handle.spawn(async move {
                let started = Process::start(&name, &command).await;
                let Some(pool) = pool.upgrade() else { return };
                {
                    let mut slots = pool.slots.lock();
                    let slot = slots.entry(command).or_default();
                    slot.starting -= 1;
                    match started {
                        Ok(p) => {
                            pool.started.fetch_add(1, Ordering::Relaxed);
                            slot.idle.push(Arc::new(p));
                        }
                        // The run that needs it starts one itself, and says why it failed.
                        Err(e) => tracing::debug!("pool: starting {name} failed: {e}"),
                    }
                }
                pool.arrived.notify_waiters();
            });
        }
    }

    /// A host for one run of driver `name` (`command`): an idle process if
    /// there is one, else one being started in the background (waited for),
    /// else a new one; then tops the pool up in the background.
    pub(crate) async fn host(
        self: &Arc<Self>,
        name: &str,
        command: &[String],
        sink: EventSink,
    ) -> Result<Host, RunError> {
        let process = loop {
            // Registered before the slot is looked at: an arrival in between wakes it.
            let arrived = self.arrived.notified();
            let (idle, starting) = match self.slots.lock().get_mut(command) {
                Some(s) => (s.idle.pop(), s.starting > 0),
                None => (None, false),
            };
            match idle {
                // It died while idle.
                Some(p) if p.failed() => self.retire_in_background(p),
                Some(p) => break p,
                None if starting => arrived.await,
                None => {
                    let (n, c) = (name.to_string(), command.to_vec());
                    let p = self
                        .handle
                        .spawn(async move { Process::start(&n, &c).await })
                        .await
                        .map_err(|e| RunError::Driver(format!("driver {name}: {e}")))??;
                    self.started.fetch_add(1, Ordering::Relaxed);
                    break Arc::new(p);
                }
            }
        };
        if process.served_runs() > 0 {
            self.reused.fetch_add(1, Ordering::Relaxed);
        }
        if process.reuse {
            self.slots
                .lock()
                .entry(command.to_vec())
                .or_default()
                .busy_reusable += 1;
        }
        self.prestart(&Implementation::Driver {
            name: name.to_string(),
            command: command.to_vec(),
        });
        Ok(Host::serve(process, sink, Some(self.clone())))
    }

    /// Takes back a reusable process after its run: `reset`, then kept if
    /// it answered and the pool has room, shut down otherwise.
    pub(crate) async fn give_back(&self, process: Arc<Process>) {
        let command = process.command().to_vec();
        // Counted as busy until it is idle again (or gone), so that a top-up
        // meanwhile does not start one more.
        let reset = process.reset().await;
        {
            let mut slots = self.slots.lock();
            let slot = slots.entry(command).or_default();
            slot.busy_reusable = slot.busy_reusable.saturating_sub(1);
            if reset && slot.idle.len() < self.size {
                slot.idle.push(process);
                drop(slots);
                self.arrived.notify_waiters();
                return;
            }
        }
        self.retired.fetch_add(1, Ordering::Relaxed);
        process.shutdown().await;
    }

    /// Counts a process shut down after its run (a reusable one that failed
    /// is no longer expected back).
    pub(crate) fn retire(&self, process: &Process) {
        self.retired.fetch_add(1, Ordering::Relaxed);
        if process.reuse {
            if let Some(s) = self.slots.lock().get_mut(process.command()) {
                s.busy_reusable = s.busy_reusable.saturating_sub(1);
            }
        }
    }

    fn retire_in_background(&self, p: Arc<Process>) {
        self.retired.fetch_add(1, Ordering::Relaxed);
        self.handle.spawn(async move { p.shutdown().await });
    }

    /// Shuts every idle process down (`shutdown`, as after a run without a
    /// pool). Processes still serving runs are shut down when their runs end
    /// and they come back to a full pool, or when the pool is dropped (killed).
    pub async fn close(&self) {
        let idle: Vec<Arc<Process>> = self
            .slots
            .lock()
            .values_mut()
            .flat_map(|s| std::mem::take(&mut s.idle))
            .collect();
        let closing: Vec<_> = idle
            .into_iter()
            .map(|p| self.handle.spawn(async move { p.shutdown().await }))
            .collect();
        for c in closing {
            let _ = c.await;
        }
    }
}

impl Drop for HostPool {
    fn drop(&mut self) {
        // Idle processes are killed as they are dropped (kill_on_drop); the
        // runtime goes without waiting, even when dropped inside another one.
        self.slots.lock().clear();
        if let Some(rt) = self.runtime.lock().take() {
            rt.shutdown_background();
        }
    }
}

impl Lender for HostPool {
    fn give_back(
        &self,
        process: Arc<Process>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(HostPool::give_back(self, process))
    }

    fn retire(&self, process: &Process) {
        HostPool::retire(self, process);
    }
}
