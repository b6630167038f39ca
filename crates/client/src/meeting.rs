//! Meetings: one `Meeting` request (docs/protocol.md §5.2) per operation
//! — create, respond, reschedule, cancel, read — answered once its writes
//! are durable. The acting person is the signed-in user's; a server
//! administrator may name another (`on_behalf_of`), as for sending.

use crate::client::Client;
use crate::error::ClientError;
use protocol::{MeetingAnswer, MeetingRequest, Request, Response};

impl Client {
    /// Runs meeting operation `op` as the signed-in user's person (or, for
    /// an administrator, `on_behalf_of`). Durable when this returns.
    pub async fn meeting(
        &self,
        op: MeetingRequest,
        on_behalf_of: Option<&str>,
    ) -> Result<MeetingAnswer, ClientError> {
        let request = Request::Meeting {
            op,
            on_behalf_of: on_behalf_of.map(str::to_string),
        };
        match self.request(request).await? {
            Response::Meeting(a) => Ok(a),
            other => Err(ClientError::unexpected("Meeting", &other)),
        }
    }
}
