//! A machine client's sign-in: the `client_credentials` grant, with no user and no browser.
//! The client proves itself with its secret (HTTP Basic or in the body, as the server
//! takes it) or with an ES256 assertion signed by its private key (`private_key_jwt`,
//! RFC 7523), and its tokens are kept like a user's.

use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, ClientCredentialsConfig, CredentialStore, StoredCredentials,
};

use crate::config::{Grant, OAuthClient};

use super::{OAuthError, TokenFile, discovered, strings, with_sources};

/// Sign in to the server at `url` as `client` itself, with no user (the `client_credentials`
/// grant), and keep its tokens: when the client says so (`grant`), or has a secret or key
/// and the authorization server names no grant but that one (and refreshing). `Ok(false)`:
/// it is not such a client — a user signs in (`begin_login`).
///
/// The scopes asked for are those a call found missing ([`TokenFile::want`]), else those
/// the server's 401 or its metadata name. With `privateKeyFile`, the client authenticates
/// with an ES256 assertion signed by that key (`private_key_jwt`, RFC 7523); else with its
/// secret, as HTTP Basic where the server takes only that, in the body otherwise.
pub async fn sign_in_as_client(
    url: &str,
    tokens: &TokenFile,
    client: Option<&OAuthClient>,
) -> Result<bool, OAuthError> {
    let Some(client) =
        client.filter(|c| c.has_credentials() && c.grant != Some(Grant::AuthorizationCode))
    else {
        return Ok(false);
    };
    crate::http::install_tls();
    let (mut manager, metadata) = discovered(url, true).await?;
    let grants = strings(
        metadata
            .additional_fields
            .get("grant_types_supported")
            .unwrap_or(&serde_json::Value::Null),
    );
    let only_machine = grants.iter().any(|g| g == "client_credentials")
        && grants
            .iter()
            .all(|g| g == "client_credentials" || g == "refresh_token");
    if client.grant.is_none() && !only_machine {
        return Ok(false);
    }
    manager.set_credential_store(tokens.store(url));
    let scopes: Vec<String> = match tokens.wanted(url) {
        Some(wanted) => wanted,
        None => manager
            .select_scopes(None, &[])
            .into_iter()
            .filter(|s| s != "offline_access")
            .collect(),
    };
    let failed = |e: AuthError| OAuthError::from_sdk("its client could not sign in", e);
    match (&client.private_key_file, &client.client_secret) {
        (Some(key), _) => {
            let pem = std::fs::read_to_string(key).map_err(|e| {
                OAuthError::Config(format!(
                    "cannot read its private key {} (oauth.privateKeyFile): {e}",
                    key.display()
                ))
            })?;
            let audience = metadata
                .issuer
                .clone()
                .unwrap_or_else(|| metadata.token_endpoint.clone());
            let assertion = jwt_assertion(&client.client_id, &audience, &pem).map_err(|e| {
                OAuthError::Config(format!("its private key {}: {e}", key.display()))
            })?;
            let answer = token_request(url, &metadata.token_endpoint, &assertion, &scopes).await?;
            let granted = answer.get("scope").and_then(|s| s.as_str()).map_or_else(
                || scopes.clone(),
                |s| s.split_whitespace().map(str::to_string).collect(),
            );
            let response: rmcp::transport::auth::OAuthTokenResponse =
                serde_json::from_value(answer).map_err(|e| {
                    OAuthError::Refused(format!(
                        "its authorization server's token is unreadable: {e}"
                    ))
                })?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let stored = StoredCredentials::new(
                client.client_id.clone(),
                Some(response),
                granted,
                Some(now),
            )
            .with_issuer(metadata.issuer.clone());
            tokens
                .store(url)
                .save(stored)
                .await
                .map_err(|e| OAuthError::Local(e.to_string()))?;
        }
        (None, Some(secret)) => {
            let config = ClientCredentialsConfig::ClientSecret {
                client_id: client.client_id.clone(),
                client_secret: secret.expose().to_string(),
                scopes,
                resource: Some(url.to_string()),
            };
            manager
                .validate_client_credentials_metadata(&config)
                .map_err(failed)?;
            manager
                .configure_client_credentials(&config)
                .map_err(failed)?;
            manager
                .exchange_client_credentials(&config)
                .await
                .map_err(failed)?;
        }
        (None, None) => return Ok(false),
    }
    Ok(true)
}

/// A `client_credentials` token request authenticated by `assertion` (RFC 7523 §2.2), its
/// answer as JSON. The assertion goes over TLS, or to this machine.
async fn token_request(
    url: &str,
    endpoint: &str,
    assertion: &str,
    scopes: &[String],
) -> Result<serde_json::Value, OAuthError> {
    let at = reqwest::Url::parse(endpoint).map_err(|e| {
        OAuthError::Refused(format!(
            "its authorization server's token endpoint {endpoint}: {e}"
        ))
    })?;
    let local = |u: &reqwest::Url| match u.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    let server = reqwest::Url::parse(url).map_err(|e| OAuthError::Config(format!("{url}: {e}")))?;
    if at.scheme() != "https" && !(local(&at) && local(&server)) {
        return Err(OAuthError::Refused(format!(
            "its token endpoint {endpoint} is not https: the client's assertion is only sent \
             over TLS"
        )));
    }
    let mut form = vec![
        ("grant_type", "client_credentials".to_string()),
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_string(),
        ),
        ("client_assertion", assertion.to_string()),
        ("resource", url.to_string()),
    ];
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .map_err(|e| OAuthError::Local(e.to_string()))?;
    let answer = http
        .post(at)
        .header("accept", "application/json")
        .form(&form)
        .send()
        .await
        .map_err(|e| {
            OAuthError::Unreachable(format!(
                "cannot reach its authorization server: {}",
                with_sources(&e)
            ))
        })?;
    let status = answer.status();
    let body: serde_json::Value = answer.json().await.unwrap_or_default();
    if !status.is_success() {
        let why = [body["error"].as_str(), body["error_description"].as_str()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
        let said = format!(
            "its authorization server refused the client ({status}{}{why})",
            if why.is_empty() { "" } else { ", " }
        );
        return Err(match status.is_server_error() {
            true => OAuthError::Unreachable(said),
            false => OAuthError::Refused(said),
        });
    }
    Ok(body)
}

/// A client assertion (RFC 7523 §3): a JWT from and about `client_id` for `audience` (the
/// authorization server's issuer), valid five minutes, signed ES256 with the P-256 key of
/// `pem` (PKCS #8, `BEGIN PRIVATE KEY`).
fn jwt_assertion(client_id: &str, audience: &str, pem: &str) -> Result<String, String> {
    use base64::Engine;
    use ring::rand::SecureRandom;
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN PRIVATE KEY-----")
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    if body.is_empty() {
        return Err(if pem.contains("BEGIN EC PRIVATE KEY") {
            "it is in SEC1 form (BEGIN EC PRIVATE KEY): convert it with `openssl pkcs8 -topk8 \
             -nocrypt -in KEY -out KEY.p8` and name that"
                .into()
        } else {
            "no `BEGIN PRIVATE KEY` block (a PEM PKCS #8 key) in it".into()
        });
    }
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| "its PEM block is not base64".to_string())?;
    let rng = ring::rand::SystemRandom::new();
    let key = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &der,
        &rng,
    )
    .map_err(|_| "it is not a P-256 (ES256) private key".to_string())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut jti = [0u8; 16];
    rng.fill(&mut jti)
        .map_err(|_| "no randomness for its id".to_string())?;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = serde_json::json!({"alg": "ES256", "typ": "JWT"});
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": b64.encode(jti),
    });
    let signed = format!(
        "{}.{}",
        b64.encode(header.to_string()),
        b64.encode(claims.to_string())
    );
    let signature = key
        .sign(&rng, signed.as_bytes())
        .map_err(|_| "it could not sign".to_string())?;
    Ok(format!("{signed}.{}", b64.encode(signature.as_ref())))
}
