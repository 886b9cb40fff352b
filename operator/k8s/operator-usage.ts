// The operator command's usage text, on its own so `aigateway --help` does not load the operator.

export const OPERATOR_USAGE = `  operator   Run the Kubernetes operator (watches one namespace, renders the gateway state)
               --namespace <ns>          (env AIGATEWAY_NAMESPACE or POD_NAMESPACE; in a pod: its own)
               --kubeconfig <file>       (env KUBECONFIG; default ~/.kube/config or in-cluster)
               --configmap <name>        rendered state      (env AIGATEWAY_CONFIGMAP, default aigateway-state)
               --secret <name>           rendered credentials (env AIGATEWAY_SECRET, default aigateway-credentials)
               --lease <name>            leader-election Lease (env AIGATEWAY_LEASE, default aigateway-operator)
               --lease-duration-ms <n>   (env AIGATEWAY_LEASE_DURATION_MS, default 15000)
               --metrics-port <n>        /metrics, /healthz, /readyz (env AIGATEWAY_METRICS_PORT, default 9090)
               --api-port <n>            control-plane API (env AIGATEWAY_API_PORT, default 8080)
               --host <h>                listen address (env AIGATEWAY_HOST, default 0.0.0.0)
               --egress-allow <list>     comma-separated egress.allow of the state: private ranges or hosts the
                                         operator's own hosts may use (env AIGATEWAY_EGRESS_ALLOW)
               --egress-client-allow <list>
                                         comma-separated egress.clientAllow: the same for hosts a request
                                         chooses (env AIGATEWAY_EGRESS_CLIENT_ALLOW; default public only)
               --protected-secrets <list>
                                         Secrets no resource may reference even when labelled: sealing key,
                                         store URLs (env AIGATEWAY_PROTECTED_SECRETS)
               --owner-deployment <name> owner of the output objects (env AIGATEWAY_OWNER_DEPLOYMENT)
               --proxy-service <name>    the proxy Service: GatewayConfigs get Programmed once every ready replica
                                         serves their generation (env AIGATEWAY_PROXY_SERVICE)
               --redis-url <url>         the proxies' Redis: UsageLimitPolicies get status.spend and
                                         ThresholdReached/Exhausted from its budget counters (env REDIS_URL)
               --identity <id>           leader-election identity (env POD_NAME; default hostname + random)
               --log-level <level>       (env AIGATEWAY_LOG_LEVEL, default info)
`;
