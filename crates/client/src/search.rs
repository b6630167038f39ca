//! Formula searches: the server streams one `SearchHit` item per document
//! found, then `SearchDone` with the count.
//!
//! [`SearchHits`] hands the hits over one at a time, in the server's
//! order, as they arrive; [`Client::search`] is the same with a callback.
//! Hits are queued without bound in the connection task (see
//! `driver.rs` for why), so a caller may issue other requests on the same
//! client between hits (read or update each document found) without
//! stalling the connection.

use crate::client::Client;
use crate::driver::{Command, Delivery, Route};
use crate::error::ClientError;
use protocol::{DbHandle, Document, Request, Response, Timestamp};
use tokio::sync::mpsc;

/// The hits of a running search, in order (from [`Client::search_hits`]).
#[derive(Debug)]
pub struct SearchHits {
    // Keeps the connection open while hits are read.
    client: Client,
    hits: mpsc::UnboundedReceiver<Delivery>,
    found: Option<u64>,
    finished: bool,
}

impl SearchHits {
    /// The next document found; `None` once the search is done (then
    /// [`found`](Self::found) has the count). After an error, `None`.
    pub async fn next(&mut self) -> Result<Option<Document>, ClientError> {
        if self.finished {
            return Ok(None);
        }
        let result = self.receive().await;
        if !matches!(result, Ok(Some(_))) {
            self.finished = true;
        }
        result
    }

    /// The number of documents found, once the search is done.
    pub fn found(&self) -> Option<u64> {
        self.found
    }

    async fn receive(&mut self) -> Result<Option<Document>, ClientError> {
        let Some(delivery) = self.hits.recv().await else {
            return Err(self.client.closed_error());
        };
        match delivery {
            Delivery::Item(Response::SearchHit(doc)) => Ok(Some(doc)),
            Delivery::Item(other) => Err(ClientError::unexpected("SearchHit", &other)),
            Delivery::Chunk(_) => Err(ClientError::UnexpectedResponse(
                "attachment bytes in a search".into(),
            )),
            Delivery::Final(answer) => match answer? {
                Response::SearchDone { found } => {
                    self.found = Some(found);
                    Ok(None)
                }
                other => Err(ClientError::unexpected("SearchDone", &other)),
            },
        }
    }
}

impl Client {
    /// Starts a formula search (e.g. `SELECT Form = "Memo"`) over `db`,
    /// optionally only documents modified at or after `since`; the hits
    /// are read from the returned [`SearchHits`]. A bad formula is the
    /// first `next()`'s error.
    pub fn search_hits(
        &self,
        db: DbHandle,
        formula: &str,
        since: Option<Timestamp>,
    ) -> Result<SearchHits, ClientError> {
        let request = Request::Search {
            db,
            formula: formula.into(),
            since,
        };
        let (tx, hits) = mpsc::unbounded_channel();
        self.submit(Command::Request {
            request,
            route: Route::Items(tx),
            started: None,
        })?;
        Ok(SearchHits {
            client: self.clone(),
            hits,
            found: None,
            finished: false,
        })
    }

    /// Runs a formula search, calling `on_hit` with each document found
    /// in order, and returns the number found.
    pub async fn search(
        &self,
        db: DbHandle,
        formula: &str,
        since: Option<Timestamp>,
        mut on_hit: impl FnMut(Document),
    ) -> Result<u64, ClientError> {
        let mut hits = self.search_hits(db, formula, since)?;
        while let Some(doc) = hits.next().await? {
            on_hit(doc);
        }
        hits.found().ok_or_else(|| self.closed_error())
    }
}
