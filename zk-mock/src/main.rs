//! `zk-mock`: serve the mock on a TCP port so test suites in any language can use it.

use std::net::{IpAddr, SocketAddr};

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// An in-process-fast, wire-compatible Apache ZooKeeper 3.8 server for tests.
#[derive(Debug, Parser)]
#[command(name = "zk-mock", version)]
struct Args {
    /// Client port (0 picks a free one; the chosen address is printed).
    #[arg(long, default_value_t = 2181)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// ZooKeeper tickTime in ms; session timeouts are bounded by 2 and 20 ticks.
    #[arg(long = "tick-time", default_value_t = 2000)]
    tick_time: u64,
    /// Largest accepted packet in bytes (jute.maxbuffer).
    #[arg(long = "max-packet-size", default_value_t = 0xfffff)]
    max_packet_size: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mock = zk_mock::ZkMock::builder()
        .listen(SocketAddr::new(args.host, args.port))
        .tick_time(args.tick_time)
        .max_packet_size(args.max_packet_size)
        .start_blocking()?;
    println!("zk-mock listening on {}", mock.connect_string());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r?,
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        tokio::signal::ctrl_c().await?;
        Ok::<_, std::io::Error>(())
    })?;
    tracing::info!("shutting down");
    mock.shutdown();
    Ok(())
}
