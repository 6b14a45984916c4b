//! A transport that counts `tools/list_changed` as it reads it. The SDK hands notifications
//! to the handler on a task of their own, so a call's answer can reach its caller before the
//! handler has heard of a change announced before it; counted here, in the read order, a
//! call knows to wait for the new list.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

pub struct Watching<T> {
    inner: T,
    announced: Arc<AtomicU64>,
}

impl<T> Watching<T> {
    pub fn new(inner: T, announced: Arc<AtomicU64>) -> Watching<T> {
        Watching { inner, announced }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watching<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let announced = Arc::clone(&self.announced);
        let received = self.inner.receive();
        async move {
            let message = received.await;
            if let Some(JsonRpcMessage::Notification(n)) = &message
                && matches!(
                    n.notification,
                    ServerNotification::ToolListChangedNotification(_)
                )
            {
                announced.fetch_add(1, Ordering::SeqCst);
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
