//! Iceberg REST catalogs (the Iceberg REST OpenAPI, which Polaris, Nessie, Unity Catalog, Gravitino,
//! Lakekeeper, Glue and S3 Tables speak): a table registered there is found, loaded and committed
//! through the catalog service instead of the file-system layout.
//!
//! A catalog is named by `catalog.*` options beside a table's storage options (so that every
//! engine task that opens the table, on any node, reaches the same catalog): [`RestSettings`].
//! [`RestCatalog`] is the HTTP client (config, OAuth2 client credentials or a bearer token, retries
//! on 429/503, errors naming the catalog and what failed); [`RestTable`] is a table in it, the
//! [`crate::table::iceberg::TableOperations`] its commits go through (`commit.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use url::Url;

use crate::runtime::block_on;
use crate::spec::metadata::TableMetadata;
use crate::{Error, Result};

mod commit;

pub use commit::RestTable;

/// `rest` selects an Iceberg REST catalog; absent (or `filesystem`), tables live in the file-system layout.
pub const TYPE: &str = "catalog.type";
/// The catalog service's base URI (`http://host:8181`, the part before `/v1`).
pub const URI: &str = "catalog.uri";
/// The warehouse asked for in the config request.
pub const WAREHOUSE: &str = "catalog.warehouse";
/// A path prefix for every request (what the config endpoint's `prefix` would otherwise set).
pub const PREFIX: &str = "catalog.prefix";
/// OAuth2 client credentials, `<client id>:<client secret>` (or a secret alone).
pub const CREDENTIAL: &str = "catalog.credential";
/// A bearer token sent as it is.
pub const TOKEN: &str = "catalog.token";
/// Where client credentials are exchanged for a token (default `<uri>/v1/oauth/tokens`).
pub const OAUTH2_SERVER_URI: &str = "catalog.oauth2-server-uri";
/// The scope asked for with client credentials (default `catalog`).
pub const SCOPE: &str = "catalog.scope";
/// The engine's name for the catalog, which errors give.
pub const NAME: &str = "catalog.name";
/// The namespace of the table the options open (levels separated by `\u{1f}`, as REST paths join them).
pub const NAMESPACE: &str = "catalog.namespace";
/// The name of the table the options open.
pub const TABLE: &str = "catalog.table";

/// The metadata file a catalog's table is opened at by the tasks of a query ([`crate::table::iceberg::Table::task_options`]):
/// they read it instead of calling the catalog.
pub const METADATA_LOCATION: &str = "catalog.metadata-location";

/// Whether `key` is one of the catalog options (they never reach the object store).
pub fn is_catalog_option(key: &str) -> bool {
    key.starts_with("catalog.")
}

/// The settings of one REST catalog, as the `catalog.*` options give them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RestSettings {
    pub name: String,
    pub uri: String,
    pub warehouse: Option<String>,
    pub prefix: Option<String>,
    pub credential: Option<String>,
    pub token: Option<String>,
    pub oauth2_server_uri: Option<String>,
    pub scope: String,
}

impl RestSettings {
    /// The REST catalog `options` name, or `None` when they name none (a file-system table).
    pub fn from_options(options: &HashMap<String, String>) -> Result<Option<Self>> {
        let get = |key: &str| options.get(key).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        match get(TYPE).as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("filesystem") | Some("hadoop") => return Ok(None),
            Some("rest") => {}
            Some(other) => {
                return Err(Error::invalid(format!("{TYPE} must be 'rest' or 'filesystem', got '{other}'")));
            }
        }
        let name = get(NAME).unwrap_or_else(|| "rest".to_owned());
        let uri = get(URI).ok_or_else(|| Error::invalid(format!("REST catalog {name}: {URI} is not set")))?;
        let parsed =
            Url::parse(&uri).map_err(|e| Error::invalid(format!("REST catalog {name}: bad {URI} '{uri}': {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::invalid(format!("REST catalog {name}: {URI} '{uri}' is not an http(s) URI")));
        }
        Ok(Some(Self {
            name,
            uri: uri.trim_end_matches('/').to_owned(),
            warehouse: get(WAREHOUSE),
            prefix: get(PREFIX),
            credential: get(CREDENTIAL),
            token: get(TOKEN),
            oauth2_server_uri: get(OAUTH2_SERVER_URI),
            scope: get(SCOPE).unwrap_or_else(|| "catalog".to_owned()),
        }))
    }
}

/// A namespace and a table name in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableIdent {
    pub namespace: Vec<String>,
    pub name: String,
}

impl TableIdent {
    /// The table the `catalog.namespace` and `catalog.table` options name.
    pub fn from_options(options: &HashMap<String, String>) -> Result<Self> {
        let namespace = options.get(NAMESPACE).ok_or_else(|| Error::invalid(format!("{NAMESPACE} is not set")))?;
        let name = options.get(TABLE).ok_or_else(|| Error::invalid(format!("{TABLE} is not set")))?;
        Ok(Self { namespace: namespace.split('\u{1f}').map(str::to_owned).collect(), name: name.clone() })
    }

    fn to_json(&self) -> Value {
        json!({"namespace": self.namespace, "name": self.name})
    }
}

impl std::fmt::Display for TableIdent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.namespace.join("."), self.name)
    }
}

/// A table as the catalog answers a load or a commit: where its current metadata is, the
/// metadata, and the storage settings the catalog gives for it (`s3.endpoint`, ...).
#[derive(Debug, Clone)]
pub struct LoadedTable {
    pub metadata_location: String,
    pub metadata: TableMetadata,
    pub config: BTreeMap<String, String>,
}

/// An answer of the catalog: its status and body.
struct Answer {
    status: StatusCode,
    body: Value,
}

impl Answer {
    /// The error message the catalog gave (`{"error": {"message": ...}}`), or the body.
    fn message(&self) -> String {
        match self.body.pointer("/error/message").and_then(Value::as_str) {
            Some(m) => m.to_owned(),
            None if self.body.is_null() => self.status.to_string(),
            None => self.body.to_string(),
        }
    }
}

/// An OAuth2 token and when to fetch a new one.
struct Token {
    value: String,
    renew_at: Option<Instant>,
}

/// How many times a request the catalog answers 429 or 503 is sent.
const ATTEMPTS: u32 = 6;

/// A connection to one REST catalog service (one per settings in the process, shared by tables).
pub struct RestCatalog {
    settings: RestSettings,
    client: reqwest::Client,
    /// `<uri>/v1/<prefix>` as path segments are appended to it.
    base: Url,
    token: Mutex<Option<Token>>,
    /// The catalog's configuration (defaults overlaid with overrides), table storage settings among them.
    config: BTreeMap<String, String>,
}

impl std::fmt::Debug for RestCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RestCatalog({} at {})", self.settings.name, self.settings.uri)
    }
}

impl RestCatalog {
    /// The catalog of `settings`: connected (config fetched, credentials exchanged) on first use
    /// and shared afterwards.
    pub fn connect(settings: &RestSettings) -> Result<Arc<Self>> {
        static CATALOGS: OnceLock<Mutex<HashMap<RestSettings, Arc<RestCatalog>>>> = OnceLock::new();
        let catalogs = CATALOGS.get_or_init(Mutex::default);
        if let Some(found) = catalogs.lock().unwrap_or_else(|p| p.into_inner()).get(settings) {
            return Ok(found.clone());
        }
        let catalog = Arc::new(Self::open(settings.clone())?);
        catalogs.lock().unwrap_or_else(|p| p.into_inner()).insert(settings.clone(), catalog.clone());
        Ok(catalog)
    }

    fn open(settings: RestSettings) -> Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| Error::Internal(format!("HTTP client: {e}")))?;
        let root = Url::parse(&format!("{}/", settings.uri))
            .map_err(|e| Error::invalid(format!("REST catalog {}: bad URI: {e}", settings.name)))?;
        let token = settings.token.clone().map(|value| Token { value, renew_at: None });
        let mut catalog = Self {
            settings,
            client,
            base: root.join("v1/").expect("a relative path joins"),
            token: Mutex::new(token),
            config: BTreeMap::new(),
        };
        let mut url = catalog.url(&["config"]);
        if let Some(warehouse) = &catalog.settings.warehouse {
            url.query_pairs_mut().append_pair("warehouse", warehouse);
        }
        let answer = catalog.send(Method::GET, url, None, "reading its configuration")?;
        let answer = catalog.expect_ok(answer, "reading its configuration")?;
        let mut config = strings(answer.body.get("defaults"));
        config.extend(strings(answer.body.get("overrides")));
        let prefix = catalog.settings.prefix.clone().or_else(|| config.get("prefix").cloned());
        if let Some(prefix) = prefix.filter(|p| !p.trim_matches('/').is_empty()) {
            catalog.base = catalog.base.join(&format!("{}/", prefix.trim_matches('/'))).map_err(|e| {
                Error::invalid(format!("REST catalog {}: bad prefix '{prefix}': {e}", catalog.settings.name))
            })?;
        }
        catalog.config = config;
        Ok(catalog)
    }

    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// The catalog's configuration: defaults overlaid with its overrides.
    pub fn config(&self) -> &BTreeMap<String, String> {
        &self.config
    }

    /// `<base>/<segments...>`, each segment percent-encoded.
    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        url.path_segments_mut().expect("an http URL has a path").pop_if_empty().extend(segments);
        url
    }

    fn namespace_url(&self, namespace: &[String], rest: &[&str]) -> Url {
        let joined = namespace.join("\u{1f}");
        let mut segments = vec!["namespaces", joined.as_str()];
        segments.extend_from_slice(rest);
        self.url(&segments)
    }

    fn table_url(&self, table: &TableIdent) -> Url {
        self.namespace_url(&table.namespace, &["tables", &table.name])
    }

    fn what(&self) -> String {
        format!("REST catalog {} at {}", self.settings.name, self.settings.uri)
    }

    /// The bearer token to send: the configured one, or one fetched with the client credentials.
    fn bearer(&self, renew: bool) -> Result<Option<String>> {
        let mut token = self.token.lock().unwrap_or_else(|p| p.into_inner());
        let stale = token.as_ref().is_none_or(|t| renew || t.renew_at.is_some_and(|at| Instant::now() >= at));
        let Some(credential) = self.settings.credential.as_ref().filter(|_| stale) else {
            return Ok(token.as_ref().map(|t| t.value.clone()));
        };
        let (id, secret) = credential.split_once(':').unwrap_or(("", credential.as_str()));
        let endpoint = match &self.settings.oauth2_server_uri {
            Some(uri) => Url::parse(uri)
                .map_err(|e| Error::invalid(format!("{}: bad {OAUTH2_SERVER_URI} '{uri}': {e}", self.what())))?,
            None => self.url_without_prefix(&["oauth", "tokens"]),
        };
        let form: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "client_credentials")
            .append_pair("client_id", id)
            .append_pair("client_secret", secret)
            .append_pair("scope", &self.settings.scope)
            .finish();
        let request =
            self.client.post(endpoint.clone()).header("Content-Type", "application/x-www-form-urlencoded").body(form);
        let answer = self.exchange(request, &endpoint, "exchanging its client credentials for a token")?;
        if !answer.status.is_success() {
            return Err(Error::invalid(format!(
                "{} refused the client credentials of {CREDENTIAL} (HTTP {} from {endpoint}): {}",
                self.what(),
                answer.status.as_u16(),
                answer.message()
            )));
        }
        let value = answer.body.get("access_token").and_then(Value::as_str).ok_or_else(|| {
            Error::Corrupt(format!("{}: the token endpoint {endpoint} answered without an access_token", self.what()))
        })?;
        let renew_at = answer
            .body
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(|s| Instant::now() + Duration::from_secs(s.saturating_sub(60).max(1)));
        *token = Some(Token { value: value.to_owned(), renew_at });
        Ok(Some(value.to_owned()))
    }

    fn url_without_prefix(&self, segments: &[&str]) -> Url {
        let mut url = Url::parse(&format!("{}/v1/", self.settings.uri)).expect("checked when the catalog opened");
        url.path_segments_mut().expect("an http URL has a path").pop_if_empty().extend(segments);
        url
    }

    /// Sends one request and reads its answer; a connection that fails is an I/O error naming the
    /// catalog and what was being done.
    fn exchange(&self, request: reqwest::RequestBuilder, url: &Url, what: &str) -> Result<Answer> {
        block_on(async {
            let response = request.send().await.map_err(|e| self.unreachable(url, what, &e))?;
            let status = response.status();
            let bytes = response.bytes().await.map_err(|e| self.unreachable(url, what, &e))?;
            let body =
                if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap_or(Value::Null) };
            Ok(Answer { status, body })
        })
    }

    fn unreachable(&self, url: &Url, what: &str, e: &reqwest::Error) -> Error {
        let mut cause = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            cause = format!("{cause}: {s}");
            source = s.source();
        }
        Error::Io {
            path: format!(
                "{} ({what}: {} {url})",
                self.what(),
                if e.is_timeout() { "timed out at" } else { "cannot reach" }
            ),
            source: std::io::Error::other(cause),
        }
    }

    /// Sends a request with the catalog's credentials, again after a short wait while the catalog
    /// answers 429 (too many requests) or 503 (unavailable), and once more with a fresh token when
    /// one fetched with client credentials is refused. A connection that fails is retried for reads
    /// only: a write that may have reached the catalog is its caller's to judge.
    fn send(&self, method: Method, url: Url, body: Option<&Value>, what: &str) -> Result<Answer> {
        let idempotent = matches!(method, Method::GET | Method::HEAD | Method::DELETE);
        let mut renewed = false;
        for attempt in 0..ATTEMPTS {
            let mut request = self.client.request(method.clone(), url.clone());
            if let Some(token) = self.bearer(false)? {
                request = request.bearer_auth(token);
            }
            if let Some(body) = body {
                request = request.header("Content-Type", "application/json").body(body.to_string());
            }
            let answer = match self.exchange(request, &url, what) {
                Ok(answer) => answer,
                Err(_) if idempotent && attempt + 1 < ATTEMPTS => {
                    wait(attempt);
                    continue;
                }
                Err(e) => return Err(e),
            };
            match answer.status {
                StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE if attempt + 1 < ATTEMPTS => {
                    wait(attempt)
                }
                StatusCode::UNAUTHORIZED if self.settings.credential.is_some() && !renewed => {
                    renewed = true;
                    self.bearer(true)?;
                }
                _ => return Ok(answer),
            }
        }
        unreachable!("the last attempt returns")
    }

    /// `answer` when the catalog accepted the request; otherwise the error its status means.
    fn expect_ok(&self, answer: Answer, what: &str) -> Result<Answer> {
        if answer.status.is_success() {
            return Ok(answer);
        }
        let status = answer.status.as_u16();
        let message = format!("{} failed {what} (HTTP {status}): {}", self.what(), answer.message());
        Err(match answer.status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Error::invalid(format!("{message}; check the catalog's {CREDENTIAL} or {TOKEN}"))
            }
            StatusCode::NOT_FOUND => Error::NotFound(message),
            s if s.is_client_error() => Error::InvalidArgument(message),
            _ => Error::Io { path: self.what(), source: std::io::Error::other(message) },
        })
    }

    fn call(&self, method: Method, url: Url, body: Option<&Value>, what: &str) -> Result<Value> {
        let answer = self.send(method, url, body, what)?;
        Ok(self.expect_ok(answer, what)?.body)
    }

    /// Every page of a listing: `field` of each answer, following `next-page-token`.
    fn pages(&self, url: Url, field: &str, what: &str) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut page = url.clone();
            if let Some(token) = &token {
                page.query_pairs_mut().append_pair("pageToken", token);
            }
            let body = self.call(Method::GET, page, None, what)?;
            items.extend(body.get(field).and_then(Value::as_array).cloned().unwrap_or_default());
            token = body.get("next-page-token").and_then(Value::as_str).map(str::to_owned);
            if token.is_none() {
                return Ok(items);
            }
        }
    }

    // ---- namespaces

    /// The namespaces under `parent` (the top level when empty).
    pub fn namespaces(&self, parent: &[String]) -> Result<Vec<Vec<String>>> {
        let mut url = self.url(&["namespaces"]);
        if !parent.is_empty() {
            url.query_pairs_mut().append_pair("parent", &parent.join("\u{1f}"));
        }
        let items = self.pages(url, "namespaces", "listing namespaces")?;
        Ok(items.iter().map(levels).collect())
    }

    pub fn namespace_exists(&self, namespace: &[String]) -> Result<bool> {
        let what = format!("loading namespace {}", namespace.join("."));
        let answer = self.send(Method::GET, self.namespace_url(namespace, &[]), None, &what)?;
        match answer.status {
            StatusCode::NOT_FOUND => Ok(false),
            _ => self.expect_ok(answer, &what).map(|_| true),
        }
    }

    /// The namespace's properties (`location`, ...).
    pub fn namespace_properties(&self, namespace: &[String]) -> Result<BTreeMap<String, String>> {
        let what = format!("loading namespace {}", namespace.join("."));
        let body = self.call(Method::GET, self.namespace_url(namespace, &[]), None, &what)?;
        Ok(strings(body.get("properties")))
    }

    /// Creates a namespace; `Ok(false)` when it exists.
    pub fn create_namespace(&self, namespace: &[String], properties: &BTreeMap<String, String>) -> Result<bool> {
        let what = format!("creating namespace {}", namespace.join("."));
        let body = json!({"namespace": namespace, "properties": properties});
        let answer = self.send(Method::POST, self.url(&["namespaces"]), Some(&body), &what)?;
        match answer.status {
            StatusCode::CONFLICT => Ok(false),
            _ => self.expect_ok(answer, &what).map(|_| true),
        }
    }

    /// Drops an empty namespace; `Ok(false)` when there is none.
    pub fn drop_namespace(&self, namespace: &[String]) -> Result<bool> {
        let what = format!("dropping namespace {}", namespace.join("."));
        let answer = self.send(Method::DELETE, self.namespace_url(namespace, &[]), None, &what)?;
        match answer.status {
            StatusCode::NOT_FOUND => Ok(false),
            StatusCode::CONFLICT => {
                Err(Error::invalid(format!("{} refused {what}: it is not empty ({})", self.what(), answer.message())))
            }
            _ => self.expect_ok(answer, &what).map(|_| true),
        }
    }

    // ---- tables

    /// The names of the tables in `namespace`.
    pub fn tables(&self, namespace: &[String]) -> Result<Vec<String>> {
        let what = format!("listing the tables of namespace {}", namespace.join("."));
        let items = self.pages(self.namespace_url(namespace, &["tables"]), "identifiers", &what)?;
        Ok(items.iter().filter_map(|i| i.get("name").and_then(Value::as_str).map(str::to_owned)).collect())
    }

    /// The table's current metadata, or [`Error::NotFound`] naming it.
    pub fn load_table(&self, table: &TableIdent) -> Result<LoadedTable> {
        let what = format!("loading table {table}");
        let body = self.call(Method::GET, self.table_url(table), None, &what)?;
        self.loaded(body, &what)
    }

    pub fn table_exists(&self, table: &TableIdent) -> Result<bool> {
        match self.load_table(table) {
            Ok(_) => Ok(true),
            Err(Error::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// A load or commit answer: `metadata-location`, `metadata`, `config`.
    fn loaded(&self, body: Value, what: &str) -> Result<LoadedTable> {
        let metadata_location = body.get("metadata-location").and_then(Value::as_str).unwrap_or_default().to_owned();
        let metadata = body
            .get("metadata")
            .ok_or_else(|| Error::Corrupt(format!("{} answered {what} without metadata", self.what())))?;
        let bytes = serde_json::to_vec(metadata).map_err(|e| Error::Internal(e.to_string()))?;
        let metadata = TableMetadata::from_json(&bytes, &metadata_location)?;
        let mut config = self.config.clone();
        config.extend(strings(body.get("config")));
        Ok(LoadedTable { metadata_location, metadata, config })
    }

    /// Where the catalog would put a new table `table` (and the storage settings for it), from a
    /// staged create that registers nothing; `location` asks for one.
    pub fn new_table_location(
        &self,
        table: &TableIdent,
        schema: &Value,
        location: Option<&str>,
    ) -> Result<(String, BTreeMap<String, String>)> {
        let what = format!("creating table {table}");
        let mut body = json!({"name": table.name, "schema": schema, "stage-create": true});
        if let Some(location) = location {
            body["location"] = json!(location);
        }
        let answer = self.send(Method::POST, self.namespace_url(&table.namespace, &["tables"]), Some(&body), &what)?;
        if answer.status == StatusCode::CONFLICT {
            return Err(Error::invalid(format!("table {table} already exists in {}", self.what())));
        }
        let answer = self.expect_ok(answer, &what)?;
        let location = answer.body.pointer("/metadata/location").and_then(Value::as_str).ok_or_else(|| {
            Error::Corrupt(format!("{} answered a staged create of {table} without a location", self.what()))
        })?;
        let mut config = self.config.clone();
        config.extend(strings(answer.body.get("config")));
        Ok((location.to_owned(), config))
    }

    /// Drops the table from the catalog (asking the catalog to purge its files when `purge`);
    /// `Ok(false)` when there is none.
    pub fn drop_table(&self, table: &TableIdent, purge: bool) -> Result<bool> {
        let what = format!("dropping table {table}");
        let mut url = self.table_url(table);
        url.query_pairs_mut().append_pair("purgeRequested", if purge { "true" } else { "false" });
        let answer = self.send(Method::DELETE, url, None, &what)?;
        match answer.status {
            StatusCode::NOT_FOUND => Ok(false),
            _ => self.expect_ok(answer, &what).map(|_| true),
        }
    }

    pub fn rename_table(&self, from: &TableIdent, to: &TableIdent) -> Result<()> {
        let what = format!("renaming table {from} to {to}");
        let body = json!({"source": from.to_json(), "destination": to.to_json()});
        let answer = self.send(Method::POST, self.url(&["tables", "rename"]), Some(&body), &what)?;
        if answer.status == StatusCode::CONFLICT {
            return Err(Error::invalid(format!("{} refused {what}: table {to} already exists", self.what())));
        }
        self.expect_ok(answer, &what).map(|_| ())
    }

    /// Registers the table whose current metadata is at `metadata_location` as `table`.
    pub fn register_table(&self, table: &TableIdent, metadata_location: &str) -> Result<LoadedTable> {
        let what = format!("registering table {table}");
        let body = json!({"name": table.name, "metadata-location": metadata_location});
        let answer =
            self.send(Method::POST, self.namespace_url(&table.namespace, &["register"]), Some(&body), &what)?;
        if answer.status == StatusCode::CONFLICT {
            return Err(Error::invalid(format!("table {table} already exists in {}", self.what())));
        }
        let body = self.expect_ok(answer, &what)?.body;
        self.loaded(body, &what)
    }
}

/// A short wait before the `attempt`-th retry: 100 ms doubling, at most 3.2 s, with jitter.
fn wait(attempt: u32) {
    let cap = 100u64 << attempt.min(5);
    let jitter = uuid::Uuid::new_v4().as_u64_pair().0 % (cap / 2 + 1);
    std::thread::sleep(Duration::from_millis(cap / 2 + jitter));
}

/// A JSON object of strings as a map (other values skipped).
fn strings(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|o| o.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned()))).collect())
        .unwrap_or_default()
}

/// A namespace as a JSON array of levels.
fn levels(value: &Value) -> Vec<String> {
    value.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

/// The object-store options for a table the catalog keeps: the catalog's storage settings
/// (Iceberg's `s3.*` names, as it hands them to its own FileIO) as object_store names, overlaid with
/// the engine's own storage options; the `catalog.*` options dropped.
pub fn storage_options(
    config: &BTreeMap<String, String>,
    options: &HashMap<String, String>,
) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (key, value) in config {
        let mapped = match key.as_str() {
            "s3.endpoint" => {
                if value.starts_with("http://") {
                    out.insert("aws_allow_http".to_owned(), "true".to_owned());
                }
                "aws_endpoint"
            }
            "s3.access-key-id" => "aws_access_key_id",
            "s3.secret-access-key" => "aws_secret_access_key",
            "s3.session-token" => "aws_session_token",
            "s3.region" | "client.region" => "aws_region",
            "s3.path-style-access" => {
                let virtual_hosted = if value.eq_ignore_ascii_case("true") { "false" } else { "true" };
                out.insert("aws_virtual_hosted_style_request".to_owned(), virtual_hosted.to_owned());
                continue;
            }
            _ => continue,
        };
        out.insert(mapped.to_owned(), value.clone());
    }
    out.extend(options.iter().filter(|(k, _)| !is_catalog_option(k)).map(|(k, v)| (k.clone(), v.clone())));
    out
}

#[cfg(test)]
mod tests;
