version = '1.0.0'
driver = 'caldera_test_k8s'
container_version = '1.12.6'
