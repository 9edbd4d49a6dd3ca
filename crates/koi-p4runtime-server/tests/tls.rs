//! The server over TLS (`--grpc-tls-cert/--grpc-tls-key`) and mutual TLS
//! (`--grpc-tls-client-ca`): a client that trusts the server's CA is served, a plaintext
//! client and (with mutual TLS) a client without a certificate signed by the client CA are
//! not. The certificates are made for the test (rcgen).

use koi_p4runtime_server::connections::MAX_CONNECTIONS;
use koi_p4runtime_server::{Server, ServerConfig, Tls};
use koi_proto::p4runtime::CapabilitiesRequest;
use koi_proto::p4runtime::p4_runtime_client::P4RuntimeClient;
use koi_runtime::{PipelineConfig, PipelineSetup, Switch, SwitchConfig};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use std::path::Path;
use std::sync::Arc;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

/// A CA, and a certificate for `names` that it signed: (CA PEM, cert PEM, key PEM).
fn issue(names: &[&str]) -> (String, String, String) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let cert = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

fn write(dir: &Path, name: &str, pem: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, pem).unwrap();
    p
}

fn switch() -> Arc<Switch> {
    Switch::start(SwitchConfig {
        pipelines: vec![PipelineSetup {
            config: PipelineConfig {
                name: "default".into(),
                device_id: 1,
                cpu_port: None,
            },
            program: None,
            init: None,
        }],
        ports: vec![],
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch")
}

/// Capabilities over a channel to `url` with `tls` (None: plaintext): the API version, or
/// the error.
async fn capabilities(url: String, tls: Option<ClientTlsConfig>) -> Result<String, String> {
    let mut ep = Channel::from_shared(url).unwrap();
    if let Some(t) = tls {
        ep = ep.tls_config(t).map_err(|e| e.to_string())?;
    }
    let ch = ep.connect().await.map_err(|e| format!("{e:?}"))?;
    P4RuntimeClient::new(ch)
        .capabilities(CapabilitiesRequest::default())
        .await
        .map(|r| r.into_inner().p4runtime_api_version)
        .map_err(|e| format!("{e:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_mutual_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (server_ca, server_cert, server_key) = issue(&["localhost"]);
    let (client_ca, client_cert, client_key) = issue(&["koi-controller"]);
    let (_other_ca, other_cert, other_key) = issue(&["intruder"]);
    let tls = Tls {
        cert: write(dir.path(), "server.pem", &server_cert),
        key: write(dir.path(), "server.key", &server_key),
        client_ca: None,
    };
    let trust = || {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&server_ca))
            .domain_name("localhost")
    };

    // TLS: a client that trusts the server's CA is served; a plaintext one is not.
    let sw = switch();
    let server = Server::start(
        Arc::clone(&sw),
        ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            tls: Some(tls.clone()),
            max_connections: MAX_CONNECTIONS,
        },
    )
    .expect("server starts with TLS");
    let port = server.local_addr().port();
    let url = format!("https://localhost:{port}");
    let v = capabilities(url.clone(), Some(trust())).await;
    assert!(v.as_deref().is_ok_and(|v| v.starts_with("1.")), "{v:?}");
    let plain = capabilities(format!("http://127.0.0.1:{port}"), None).await;
    assert!(plain.is_err(), "a plaintext client was served: {plain:?}");
    // A client that does not trust the server's certificate refuses it.
    let untrusted = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&client_ca))
        .domain_name("localhost");
    assert!(capabilities(url, Some(untrusted)).await.is_err());
    server.shutdown();

    // Mutual TLS: only a client certificate signed by the client CA is served.
    let server = Server::start(
        Arc::clone(&sw),
        ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            tls: Some(Tls {
                client_ca: Some(write(dir.path(), "client-ca.pem", &client_ca)),
                ..tls.clone()
            }),
            max_connections: MAX_CONNECTIONS,
        },
    )
    .expect("server starts with mutual TLS");
    let url = format!("https://localhost:{}", server.local_addr().port());
    let signed = trust().identity(Identity::from_pem(&client_cert, &client_key));
    let v = capabilities(url.clone(), Some(signed)).await;
    assert!(v.is_ok(), "{v:?}");
    let none = capabilities(url.clone(), Some(trust())).await;
    assert!(none.is_err(), "a client without a certificate was served");
    let other = trust().identity(Identity::from_pem(&other_cert, &other_key));
    let v = capabilities(url, Some(other)).await;
    assert!(v.is_err(), "a certificate of another CA was served");
    server.shutdown();

    // A key file that is missing is a clear error at start, not a server without TLS.
    let err = Server::start(
        Arc::clone(&sw),
        ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            tls: Some(Tls {
                key: dir.path().join("missing.key"),
                ..tls
            }),
            max_connections: MAX_CONNECTIONS,
        },
    )
    .err()
    .expect("refused");
    assert!(err.contains("--grpc-tls-key"), "{err}");
    sw.stop();
    sw.join();
}
