use std::collections::{BTreeMap, HashMap};

use arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use serde_json::Value;

use super::commit::changes;
use super::*;
use crate::spec::metadata::{Snapshot, SnapshotRef};
use crate::spec::schema::Schema;

fn options(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn metadata() -> TableMetadata {
    let arrow = ArrowSchema::new(vec![Field::new("id", DataType::Int64, false)]);
    let (schema, _) = Schema::from_arrow(&arrow).unwrap();
    TableMetadata::new_table("/w/ns/t", "6c0f", schema, BTreeMap::from([("a".into(), "1".into())]), 1).unwrap()
}

fn actions(updates: &[Value]) -> Vec<&str> {
    updates.iter().map(|u| u["action"].as_str().unwrap()).collect()
}

#[test]
fn settings_come_from_the_catalog_options() {
    assert_eq!(RestSettings::from_options(&options(&[])).unwrap(), None);
    assert_eq!(RestSettings::from_options(&options(&[(TYPE, "filesystem")])).unwrap(), None);
    let err = RestSettings::from_options(&options(&[(TYPE, "rest")])).unwrap_err();
    assert!(err.to_string().contains("catalog.uri is not set"), "{err}");
    let err = RestSettings::from_options(&options(&[(TYPE, "glue"), (URI, "http://x")])).unwrap_err();
    assert!(err.to_string().contains("'rest' or 'filesystem', got 'glue'"), "{err}");
    let err = RestSettings::from_options(&options(&[(TYPE, "rest"), (URI, "ftp://x"), (NAME, "lake")])).unwrap_err();
    assert!(err.to_string().contains("REST catalog lake") && err.to_string().contains("not an http"), "{err}");
    let settings = RestSettings::from_options(&options(&[(TYPE, "REST"), (URI, "http://h:8181/"), (WAREHOUSE, "w")]))
        .unwrap()
        .unwrap();
    assert_eq!(
        (settings.uri.as_str(), settings.warehouse.as_deref(), settings.scope.as_str()),
        ("http://h:8181", Some("w"), "catalog")
    );
}

#[test]
fn an_unreachable_catalog_is_an_io_error_naming_it() {
    // A port nothing listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let uri = format!("http://127.0.0.1:{port}");
    let settings =
        RestSettings::from_options(&options(&[(TYPE, "rest"), (URI, &uri), (NAME, "lake")])).unwrap().unwrap();
    let err = RestCatalog::connect(&settings).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    assert!(
        text.contains("REST catalog lake") && text.contains(&uri) && text.contains("reading its configuration"),
        "{text}"
    );
}

#[test]
fn a_new_table_is_created_with_everything_it_declares() {
    let next = metadata();
    let (requirements, updates) = changes(None, &next).unwrap();
    assert_eq!(requirements, vec![serde_json::json!({"type": "assert-create"})]);
    assert_eq!(
        actions(&updates),
        [
            "assign-uuid",
            "upgrade-format-version",
            "add-schema",
            "set-current-schema",
            "add-spec",
            "set-default-spec",
            "add-sort-order",
            "set-default-sort-order",
            "set-location",
            "set-properties"
        ]
    );
    assert_eq!(updates[3]["schema-id"], -1, "the schema added last");
    assert_eq!(updates[2]["schema"]["fields"][0]["name"], "id");
}

#[test]
fn an_append_adds_its_snapshot_and_moves_main_from_where_it_was_read() {
    let base = metadata();
    let mut next = base.clone();
    next.snapshots.push(Snapshot {
        snapshot_id: 7,
        parent_snapshot_id: None,
        sequence_number: 1,
        timestamp_ms: 2,
        manifest_list: "/w/ns/t/metadata/snap-7.avro".into(),
        summary: BTreeMap::from([("operation".into(), "append".into())]),
        schema_id: Some(0),
        first_row_id: None,
        added_rows: None,
        other: BTreeMap::new(),
    });
    next.current_snapshot_id = Some(7);
    next.refs.insert("main".into(), SnapshotRef::branch(7));
    next.properties.remove("a");
    next.properties.insert("b".into(), "2".into());
    let (requirements, updates) = changes(Some(&base), &next).unwrap();
    assert_eq!(actions(&updates), ["add-snapshot", "set-snapshot-ref", "set-properties", "remove-properties"]);
    assert_eq!(updates[1]["ref-name"], "main");
    assert_eq!(updates[1]["snapshot-id"], 7);
    assert_eq!(updates[1]["type"], "branch");
    assert_eq!(requirements[0]["type"], "assert-table-uuid");
    assert_eq!(
        requirements[1],
        serde_json::json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": null})
    );

    // Expiring it later removes it and asks main to be at it.
    let (requirements, updates) = changes(Some(&next), &base).unwrap();
    assert_eq!(actions(&updates), ["remove-snapshots", "remove-snapshot-ref", "set-properties", "remove-properties"]);
    assert_eq!(requirements[1]["snapshot-id"], 7);
}

#[test]
fn storage_settings_from_the_catalog_become_object_store_options_under_the_engines_own() {
    let config = BTreeMap::from([
        ("s3.endpoint".to_owned(), "http://127.0.0.1:9000".to_owned()),
        ("s3.access-key-id".to_owned(), "k".to_owned()),
        ("s3.path-style-access".to_owned(), "true".to_owned()),
        ("prefix".to_owned(), "p".to_owned()),
    ]);
    let mine = options(&[("aws_access_key_id", "mine"), (URI, "http://x")]);
    let out = storage_options(&config, &mine);
    assert_eq!(out.get("aws_endpoint").map(String::as_str), Some("http://127.0.0.1:9000"));
    assert_eq!(out.get("aws_allow_http").map(String::as_str), Some("true"));
    assert_eq!(out.get("aws_virtual_hosted_style_request").map(String::as_str), Some("false"));
    assert_eq!(out.get("aws_access_key_id").map(String::as_str), Some("mine"));
    assert!(!out.contains_key(URI) && !out.contains_key("prefix"));
}
