//! Streamable HTTP servers, on the SDK's client transport.

use std::collections::{BTreeMap, HashMap};
use std::sync::Once;

use rmcp::service::RoleClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};

/// The transport to `url`, sending `headers` (the configuration's, `${VAR}`s expanded) with
/// every request.
pub fn streamable(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<impl Transport<RoleClient> + 'static, String> {
    install_tls();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.custom_headers = self::headers(headers)?;
    Ok(StreamableHttpClientTransport::from_config(config))
}

/// The configuration's headers as the SDK takes them.
pub fn headers(
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`headers.{name}` is not a valid header name"))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("`headers.{name}` holds characters a header cannot carry"))?;
        custom.insert(header, value);
    }
    Ok(custom)
}

/// The SDK's HTTP client takes the process's TLS provider: ring, the one the rest of the
/// daemon's HTTP uses.
pub(crate) fn install_tls() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
